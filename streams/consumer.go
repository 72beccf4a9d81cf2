package streams

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// Consumers run on go-redis directly rather than a watermill Router:
// watermill-redisstream reads with COUNT 1 and waits for each ack (the save
// stage must batch), and drops acks that race Router.Close (our shutdown
// must leave nothing it took unacknowledged). See shared/LIBRARY-NOTES.md.

// Handler processes a batch of entries read from one stream, in stream
// order, and acknowledges them itself (stages ack together with their output
// in one script; see Commit). A returned error means "nothing of this
// batch is done, try it again later": the consumer retries the same batch
// with backoff and keeps it claimed — unless it is Failures, which names the
// entries that failed on their own after the rest were done (see
// RetryPolicy). Handlers must be idempotent: an entry can arrive again after
// a crash or a reclaim.
type Handler func(ctx context.Context, batch []redis.XMessage) error

// ConsumerConfig configures one consumer of one stream.
type ConsumerConfig struct {
	Stream   string
	Group    string
	Consumer string        // stable across restarts: own pending entries are resumed at start
	Count    int           // most entries per read
	Block    time.Duration // XREADGROUP BLOCK; also bounds how long shutdown waits for a read
	// ClaimMinIdle: an entry pending this long is in no consumer's hands
	// any more (its consumer died, or its handler failed it; a consumer
	// keeps the entries it works on fresh): it is claimed and handled
	// again once its Retry delay has passed too, checked every ClaimEvery
	// (default ClaimMinIdle/2). 0: nothing is reclaimed or kept fresh.
	ClaimMinIdle time.Duration
	ClaimEvery   time.Duration
	TrimInterval time.Duration
	// Retry is how failed batches and entries are retried (RetryPolicy).
	Retry RetryPolicy
	// DeadLetter parks entries failed permanently or out of attempts; nil
	// leaves them pending (logged).
	DeadLetter DeadLetterer
	// DrainTimeout bounds finishing the in-flight batch after shutdown starts.
	DrainTimeout time.Duration
	// TakeOver: this consumer just became the stream's only owner (a shard
	// lease): at start it claims every entry pending on other consumers at
	// once instead of waiting ClaimMinIdle — their commits are fenced, so
	// redoing them is safe.
	TakeOver bool
	// Dead, when set, names consumers of instances that are gone: they are
	// removed from the group (XGROUP DELCONSUMER) once they have no pending
	// entries, after the take-over and then every PruneEvery.
	Dead       func(consumer string) bool
	PruneEvery time.Duration
	// Pace: after a read of fewer than Count new entries, wait this long
	// before reading again, so the entries arriving meanwhile make one
	// batch. For a stage whose output may lag (the search index): at light
	// load it then costs one read, one write and one ack per Pace instead of
	// per entry; under load (full reads) it never waits. 0: read at once.
	Pace time.Duration
}

// Consumer reads one stream as one member of a consumer group.
type Consumer struct {
	rdb redis.UniversalClient
	cfg ConsumerConfig
	log *slog.Logger
	// lastRead is the highest ID read with ">": entries at or below it were
	// delivered to some consumer of the group, so with the group's lowest
	// pending ID it bounds what trimming may remove.
	lastRead string
	// fenced: a commit was refused because the shard's lease moved on; the
	// consumer stops.
	fenced bool
	// retryFrom is where the next retryDue round scans the pending list
	// from ("": its start).
	retryFrom string
}

// NewConsumer returns a consumer; Run starts it.
func NewConsumer(rdb redis.UniversalClient, cfg ConsumerConfig, log *slog.Logger) *Consumer {
	if cfg.Count < 1 {
		cfg.Count = 1
	}
	cfg.Retry = cfg.Retry.withDefaults()
	if cfg.DrainTimeout <= 0 {
		cfg.DrainTimeout = 30 * time.Second
	}
	return &Consumer{rdb: rdb, cfg: cfg, log: log.With("stream", cfg.Stream, "group", cfg.Group, "consumer", cfg.Consumer)}
}

// EnsureGroup creates the stream and its group if missing, starting at the
// stream's beginning so entries appended before the group existed are read.
func EnsureGroup(ctx context.Context, rdb redis.UniversalClient, stream, group string) error {
	err := rdb.XGroupCreateMkStream(ctx, stream, group, "0").Err()
	if err != nil && !strings.Contains(err.Error(), "BUSYGROUP") {
		return fmt.Errorf("create group %s on %s: %w", group, stream, err)
	}
	return nil
}

// Run consumes until ctx is cancelled, then finishes the batch in hand and
// returns: it reads nothing new after cancellation and acknowledges nothing
// unfinished (a batch still failing at the drain timeout stays pending for
// the next start or a peer's reclaim). Order of work: this consumer's own
// pending entries first (a restart resumes them at once), then, every
// ClaimEvery, the pending entries due again (retryDue), and new entries.
func (c *Consumer) Run(ctx context.Context, h Handler) error {
	if err := EnsureGroup(ctx, c.rdb, c.cfg.Stream, c.cfg.Group); err != nil {
		if ctx.Err() != nil {
			return nil // stopped before it started: nothing was taken
		}
		return err
	}
	// Reads are never cancelled mid-flight: a cancelled XREADGROUP may have
	// moved entries into our pending list that we then never see. Block
	// bounds the wait instead.
	readCtx := context.WithoutCancel(ctx)
	if err := c.resumeOwn(ctx, readCtx, h); err != nil {
		return err
	}
	if c.cfg.TakeOver {
		c.reclaimIdle(ctx, readCtx, h, 0)
	}
	if c.fenced {
		return ErrFenced
	}
	c.prune(readCtx)
	nextPrune := time.Now().Add(c.cfg.PruneEvery)
	claimEvery := c.cfg.ClaimEvery
	if claimEvery <= 0 {
		claimEvery = c.cfg.ClaimMinIdle / 2
	}
	claimEvery = max(claimEvery, 10*time.Millisecond)
	nextClaim := time.Now().Add(claimEvery)
	nextTrim := time.Now().Add(c.cfg.TrimInterval)
	for ctx.Err() == nil && !c.fenced {
		now := time.Now()
		if c.cfg.ClaimMinIdle > 0 && now.After(nextClaim) {
			c.retryDue(ctx, readCtx, h)
			nextClaim = now.Add(claimEvery)
		}
		if c.cfg.PruneEvery > 0 && now.After(nextPrune) {
			c.prune(readCtx)
			nextPrune = now.Add(c.cfg.PruneEvery)
		}
		if c.cfg.TrimInterval > 0 && now.After(nextTrim) {
			c.trim(readCtx)
			nextTrim = now.Add(c.cfg.TrimInterval)
		}
		block := c.cfg.Block
		if c.cfg.ClaimMinIdle > 0 {
			block = min(block, time.Until(nextClaim)+time.Millisecond)
		}
		res, err := c.rdb.XReadGroup(readCtx, &redis.XReadGroupArgs{
			Group: c.cfg.Group, Consumer: c.cfg.Consumer, Streams: []string{c.cfg.Stream, ">"},
			Count: int64(c.cfg.Count), Block: max(block, time.Millisecond),
		}).Result()
		if errors.Is(err, redis.Nil) {
			continue
		}
		if err != nil {
			if isNoGroup(err) {
				_ = EnsureGroup(readCtx, c.rdb, c.cfg.Stream, c.cfg.Group)
				continue
			}
			c.log.Warn("read failed", "err", err)
			c.sleep(ctx, c.cfg.Retry.Backoff*4)
			continue
		}
		if len(res) == 0 || len(res[0].Messages) == 0 {
			continue
		}
		batch := res[0].Messages
		c.lastRead = batch[len(batch)-1].ID
		c.process(ctx, batch, h)
		if c.cfg.Pace > 0 && len(batch) < c.cfg.Count {
			c.sleep(ctx, c.cfg.Pace)
		}
	}
	if c.fenced {
		return ErrFenced
	}
	return nil
}

// prune removes dead consumers with nothing pending (Dead set).
func (c *Consumer) prune(ctx context.Context) {
	if c.cfg.Dead == nil {
		return
	}
	dead := func(name string) bool { return name != c.cfg.Consumer && c.cfg.Dead(name) }
	removed, err := PruneConsumers(ctx, c.rdb, c.cfg.Stream, c.cfg.Group, dead)
	if err != nil {
		c.log.Debug("prune dead consumers failed", "err", err)
	}
	if len(removed) > 0 {
		c.log.Info("removed dead consumers from the group", "consumers", removed)
	}
}

// resumeOwn hands this consumer's own pending entries (left by a crash of
// the previous process with the same name) to the handler.
func (c *Consumer) resumeOwn(ctx, readCtx context.Context, h Handler) error {
	start := "0"
	for ctx.Err() == nil {
		res, err := c.rdb.XReadGroup(readCtx, &redis.XReadGroupArgs{
			Group: c.cfg.Group, Consumer: c.cfg.Consumer, Streams: []string{c.cfg.Stream, start},
			Count: int64(c.cfg.Count),
		}).Result()
		if err != nil && !errors.Is(err, redis.Nil) {
			return fmt.Errorf("read own pending of %s: %w", c.cfg.Stream, err)
		}
		if len(res) == 0 || len(res[0].Messages) == 0 {
			return nil
		}
		msgs := liveOnly(res[0].Messages)
		start = res[0].Messages[len(res[0].Messages)-1].ID
		if len(msgs) > 0 {
			c.process(ctx, msgs, h)
		}
		if c.fenced {
			return ErrFenced
		}
	}
	return nil
}

// process runs the handler on a batch until it succeeds, backing off between
// tries and keeping the entries' idle time fresh so peers do not reclaim a
// batch that is merely waiting for the database. After shutdown starts it
// keeps trying only until DrainTimeout. Entries the handler fails on their
// own are settled by settleFailures.
func (c *Consumer) process(ctx context.Context, batch []redis.XMessage, h Handler) {
	work := context.WithoutCancel(ctx)
	var drainDeadline time.Time
	backoff := c.cfg.Retry.Backoff
	for attempt := 1; ; attempt++ {
		stop := c.keepFresh(work, batch)
		err := h(work, batch)
		stop()
		if err == nil {
			return
		}
		var failed Failures
		if errors.As(err, &failed) {
			c.settleFailures(work, batch, failed)
			return
		}
		if errors.Is(err, ErrFenced) {
			// The shard's lease moved on: the new owner redoes this batch.
			c.log.Warn("shard lease lost: stopping; the batch is left to the new owner", "count", len(batch), "first", batch[0].ID)
			c.fenced = true
			return
		}
		if ctx.Err() != nil {
			if drainDeadline.IsZero() {
				drainDeadline = time.Now().Add(c.cfg.DrainTimeout)
			}
			if time.Now().After(drainDeadline) {
				c.log.Warn("shutdown: leaving batch pending", "count", len(batch), "first", batch[0].ID, "err", err)
				return
			}
		}
		c.log.Warn("batch failed, retrying", "count", len(batch), "first", batch[0].ID, "attempt", attempt, "backoff", backoff, "err", err)
		c.touch(work, batch)
		c.sleep(work, backoff)
		backoff = min(backoff*2, c.cfg.Retry.BackoffMax)
	}
}

// trim removes entries every member of the group has acknowledged: those
// below both the group's lowest pending ID and the last ID this consumer
// read (anything above that may not have been delivered yet). Unprocessed
// entries are never trimmed; MAXLEN is never used.
func (c *Consumer) trim(ctx context.Context) {
	if c.lastRead == "" {
		return
	}
	bound := c.lastRead
	p, err := c.rdb.XPending(ctx, c.cfg.Stream, c.cfg.Group).Result()
	if err != nil {
		return
	}
	if p.Count > 0 && compareIDs(p.Lower, bound) < 0 {
		bound = p.Lower
	}
	if err := c.rdb.XTrimMinIDApprox(ctx, c.cfg.Stream, bound, 0).Err(); err != nil {
		c.log.Debug("trim failed", "err", err)
	}
}

func (c *Consumer) sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

// liveOnly drops entries deleted while pending (XREADGROUP 0 and XAUTOCLAIM
// report them with no fields).
func liveOnly(msgs []redis.XMessage) []redis.XMessage {
	out := msgs[:0:0]
	for _, m := range msgs {
		if len(m.Values) > 0 {
			out = append(out, m)
		}
	}
	return out
}

func isNoGroup(err error) bool { return strings.Contains(err.Error(), "NOGROUP") }

// compareIDs orders stream IDs "ms-seq".
func compareIDs(a, b string) int {
	am, as := splitID(a)
	bm, bs := splitID(b)
	switch {
	case am != bm:
		return cmpU(am, bm)
	default:
		return cmpU(as, bs)
	}
}

func cmpU(a, b uint64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func splitID(id string) (uint64, uint64) {
	var ms, seq uint64
	_, _ = fmt.Sscanf(id, "%d-%d", &ms, &seq)
	return ms, seq
}
