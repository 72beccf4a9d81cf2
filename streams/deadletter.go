package streams

import (
	"context"
	"fmt"
	"strconv"

	"github.com/redis/go-redis/v9"
)

// Fields a dead-letter entry carries besides the entry's own (capped) and
// the source stream and error the commit adds.
const (
	fieldAttempts    = "attempts"
	fieldSourceEntry = "source_entry"
)

// Dead is an entry a consumer gives up on: delivered Attempts times, last
// failed with Err.
type Dead struct {
	Entry    redis.XMessage
	Attempts int64
	Err      error
}

// DeadLetterer parks the entries a consumer gives up on and acknowledges
// them, together. An error leaves them pending: they are retried and
// offered again.
type DeadLetterer interface {
	DeadLetter(ctx context.Context, dead []Dead) error
}

// DeadLetters is the one dead-letter path of every consumer: each entry's
// fields, capped (CapDeadFields), with its source stream, error, attempts
// and ID, are appended to Stream and the entry acknowledged in one atomic
// commit (fenced when ctx carries a fence, see WithFence). Stream must
// share Input's hash tag.
type DeadLetters struct {
	Redis redis.UniversalClient
	// Input and Group: the stream the entries came from and its group.
	Input, Group string
	// Stream is the dead-letter stream.
	Stream string
	// MaxLen caps Stream, trimmed after each park; 0: not trimmed here.
	MaxLen int64
	// BodyField names the field holding an entry's body; "" is "m" (the
	// pipeline's messages). MaxBody is the most of it kept; 0 is 1024.
	BodyField string
	MaxBody   int
	// DeleteInput deletes parked entries from Input (XDEL), for a stream
	// that keeps only what is pending.
	DeleteInput bool
	// Prepare, when set, runs before the commit: the stage's own part of
	// dead-lettering (the save stage writes placeholder rows and settles
	// the messages' seqs in c). An error parks nothing.
	Prepare func(ctx context.Context, dead []Dead, c *Commit) error
	// Parked, when set, hears of the entries once parked (metrics, the
	// stage's log, telling a sender).
	Parked func(ctx context.Context, dead []Dead)
}

var _ DeadLetterer = (*DeadLetters)(nil)

// Commit returns the commit that parks dead.
func (d *DeadLetters) Commit(dead []Dead) Commit {
	field, maxBody := d.BodyField, d.MaxBody
	if field == "" {
		field = fieldMsg
	}
	if maxBody <= 0 {
		maxBody = 1024
	}
	c := Commit{Input: d.Input, Group: d.Group, Dead: d.Stream, Ack: make([]string, len(dead)), ToDead: make([]DeadEntry, len(dead))}
	for i, x := range dead {
		fields := CapDeadFields(x.Entry.Values, field, maxBody)
		fields[fieldAttempts] = strconv.FormatInt(x.Attempts, 10)
		fields[fieldSourceEntry] = x.Entry.ID
		cause := "failed"
		if x.Err != nil {
			cause = x.Err.Error()
		}
		c.Ack[i] = x.Entry.ID
		c.ToDead[i] = DeadEntry{Fields: fields, Source: d.Input, Err: cutUTF8(cause, 1024)}
	}
	return c
}

// DeadLetter parks dead: Prepare, the Commit, then deleting them from
// Input (DeleteInput), trimming Stream to MaxLen, and Parked. Deleting and
// trimming are best effort: the entries are parked and acknowledged
// already, a leftover input entry is trimmed by its consumer and the cap
// is applied again at the next park.
func (d *DeadLetters) DeadLetter(ctx context.Context, dead []Dead) error {
	if len(dead) == 0 {
		return nil
	}
	c := d.Commit(dead)
	if d.Prepare != nil {
		if err := d.Prepare(ctx, dead, &c); err != nil {
			return fmt.Errorf("dead-letter %d entries: %w", len(dead), err)
		}
	}
	if err := c.Apply(ctx, d.Redis); err != nil {
		return fmt.Errorf("dead-letter %d entries: %w", len(dead), err)
	}
	if d.DeleteInput {
		_ = d.Redis.XDel(ctx, d.Input, c.Ack...).Err()
	}
	if d.MaxLen > 0 {
		_ = TrimDead(ctx, d.Redis, d.Stream, d.MaxLen, 0)
	}
	if d.Parked != nil {
		d.Parked(ctx, dead)
	}
	return nil
}

// AckDelete acknowledges ids and deletes them from stream in one atomic
// step, for a stream that keeps only what is pending (the webhook events).
func AckDelete(ctx context.Context, rdb redis.UniversalClient, stream, group string, ids []string) error {
	if len(ids) == 0 {
		return nil
	}
	_, err := rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.XAck(ctx, stream, group, ids...)
		p.XDel(ctx, stream, ids...)
		return nil
	})
	return classify(fmt.Sprintf("acknowledge %d entries of %s", len(ids), stream), err)
}
