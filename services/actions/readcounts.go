package actions

import (
	"context"
	"log/slog"
	"slices"
	gosync "sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/nexo-im/nexo/domain"
	"github.com/nexo-im/nexo/store"
)

// Pusher pushes to every connection of some users, on any instance
// (ws.Pushes over the cluster relay).
type Pusher interface {
	PushToUsers(ctx context.Context, userIDs []string, p domain.Push, exceptConn string) int
}

// ReadCountJSON is one message's read count in a 2104 push.
type ReadCountJSON struct {
	Seq         int64 `json:"seq"`
	ReadCount   int   `json:"read_count"`
	MemberCount int   `json:"member_count"`
}

// ReadCountPushJSON is the data of a 2104 push: the read counts of the
// receiver's own messages among those read since the last update.
type ReadCountPushJSON struct {
	ConversationID string          `json:"conversation_id"`
	Counts         []ReadCountJSON `json:"counts"`
}

// readCountScan caps the messages one update counts: the newest of the
// span read since the last update.
const readCountScan = 50

// ReadCounts coalesces group read receipts into read-count updates
// (docs/sync.md, "Read counts"). The cursor writer tells it (Note) which
// seqs of a group conversation a member just read; every
// sync.read_count_interval it takes, per conversation with news, a Redis
// lock that lives one interval — so at most one update per conversation
// and interval leaves the whole cluster — counts the readers of the
// newest messages of the span from the read cursors and the member cache,
// and pushes each of their senders one 2104 with its messages' counts. A
// conversation whose lock another instance holds stays noted for the next
// tick, so the last reads are always counted. Counts are absolute: a lost
// or repeated update is healed by the next one, and GET /msg/read_by
// answers from the same cursors.
type ReadCounts struct {
	store    Store
	viewers  GroupViewers
	push     Pusher
	rdb      redis.UniversalClient
	keys     store.Keys
	interval time.Duration
	log      *slog.Logger

	mu    gosync.Mutex
	dirty map[string]span
}

type span struct{ after, upto int64 }

// NewReadCounts returns the read-count coalescer; interval is
// sync.read_count_interval.
func NewReadCounts(st Store, viewers GroupViewers, push Pusher, rdb redis.UniversalClient, keys store.Keys, interval time.Duration, log *slog.Logger) *ReadCounts {
	return &ReadCounts{store: st, viewers: viewers, push: push, rdb: rdb, keys: keys, interval: interval, log: log, dirty: map[string]span{}}
}

// Note records that a member of a group conversation read (after, upto]
// (sync.ReadCountSink). It never blocks on I/O.
func (r *ReadCounts) Note(conversationID string, after, upto int64) {
	if upto <= after || domain.GroupIDOf(conversationID) == "" {
		return
	}
	r.mu.Lock()
	if s, ok := r.dirty[conversationID]; ok {
		after, upto = min(after, s.after), max(upto, s.upto)
	}
	r.dirty[conversationID] = span{after, upto}
	r.mu.Unlock()
}

// Run flushes every interval until ctx ends.
func (r *ReadCounts) Run(ctx context.Context) error {
	t := time.NewTicker(r.interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
			r.Flush(ctx)
		}
	}
}

// Flush sends the updates of every noted conversation whose lock it gets.
func (r *ReadCounts) Flush(ctx context.Context) {
	r.mu.Lock()
	batch := r.dirty
	r.dirty = map[string]span{}
	r.mu.Unlock()
	for conv, s := range batch {
		ok, err := r.rdb.SetNX(ctx, r.keys.Key("readcount", conv), "1", r.interval).Result()
		if err != nil || !ok {
			r.Note(conv, s.after, s.upto) // another instance just sent one, or Redis is away: next tick
			continue
		}
		if err := r.send(ctx, conv, s); err != nil {
			r.log.Warn("read-count update skipped", "conversation_id", conv, "err", err)
		}
	}
}

// send counts the readers of the newest messages of (s.after, s.upto] and
// pushes each sender its own.
func (r *ReadCounts) send(ctx context.Context, conv string, s span) error {
	msgs, err := r.store.SentIn(ctx, conv, max(s.after, s.upto-readCountScan*4), s.upto, readCountScan)
	if err != nil || len(msgs) == 0 {
		return err
	}
	lowest := msgs[len(msgs)-1].Seq
	cursors, err := r.store.ReadersFrom(ctx, conv, lowest)
	if err != nil {
		return err
	}
	read := make(map[string]int64, len(cursors))
	for _, c := range cursors {
		read[c.UserID] = c.ReadSeq
	}
	groupID := domain.GroupIDOf(conv)
	bySender := map[string][]ReadCountJSON{}
	for _, m := range msgs {
		viewers, err := r.viewers.SawSeq(ctx, groupID, m.Seq)
		if err != nil {
			return err
		}
		c := ReadCountJSON{Seq: m.Seq}
		for _, u := range viewers {
			if u == m.SenderID {
				continue
			}
			c.MemberCount++
			if read[u] >= m.Seq {
				c.ReadCount++
			}
		}
		bySender[m.SenderID] = append(bySender[m.SenderID], c)
	}
	for sender, counts := range bySender {
		slices.Reverse(counts) // ascending seq
		r.push.PushToUsers(ctx, []string{sender}, domain.Push{Kind: domain.PushReadCount,
			Data: ReadCountPushJSON{ConversationID: conv, Counts: counts}}, "")
	}
	return nil
}
