package streams

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// RetryPolicy is how a consumer retries what its handler fails, the same
// for every stage. A batch whose handler returns a plain error is retried
// in place, whole, after Backoff doubling up to BackoffMax, for as long as
// it fails (the cause is the stage's: its database or Redis is away). An
// entry the handler fails on its own (Failures) stays pending and is
// retried once it has been idle for the consumer's ClaimMinIdle and for
// Delay of its deliveries; when it fails with MaxAttempts deliveries
// behind it, or permanently (Permanent), it is dead-lettered.
type RetryPolicy struct {
	// MaxAttempts is how many deliveries an entry that keeps failing gets
	// before it is dead-lettered; 0: it is retried until it succeeds.
	MaxAttempts int
	// Backoff is the wait before the second attempt; it doubles per
	// attempt up to BackoffMax. Unset: 50ms and Backoff.
	Backoff    time.Duration
	BackoffMax time.Duration
}

// withDefaults fills the unset backoffs.
func (p RetryPolicy) withDefaults() RetryPolicy {
	if p.Backoff <= 0 {
		p.Backoff = 50 * time.Millisecond
	}
	if p.BackoffMax < p.Backoff {
		p.BackoffMax = p.Backoff
	}
	return p
}

// Delay is the wait before the next attempt after attempts failed ones
// (1 or less: Backoff).
func (p RetryPolicy) Delay(attempts int64) time.Duration {
	p = p.withDefaults()
	d := p.Backoff
	for i := int64(1); i < attempts && d < p.BackoffMax; i++ {
		d *= 2
	}
	return min(d, p.BackoffMax)
}

// Exhausted reports whether an entry that failed after attempts
// deliveries is out of attempts.
func (p RetryPolicy) Exhausted(attempts int64) bool {
	return p.MaxAttempts > 0 && attempts >= int64(p.MaxAttempts)
}

// Failures is a Handler's error naming the entries of its batch that
// failed on their own, by entry ID, with their causes. The handler has
// finished (and acknowledged) every other entry of the batch; these stay
// pending, and the consumer retries or dead-letters each per its
// RetryPolicy. Return it with Err, which is nil when nothing failed.
type Failures map[string]error

// Error lists the failed entries.
func (f Failures) Error() string {
	ids := make([]string, 0, len(f))
	for id := range f {
		ids = append(ids, id)
	}
	slices.SortFunc(ids, compareIDs)
	var b strings.Builder
	fmt.Fprintf(&b, "%d entries failed:", len(ids))
	for _, id := range ids {
		fmt.Fprintf(&b, " %s (%v)", id, f[id])
	}
	return b.String()
}

// Err returns f as an error, or nil when it names no entry.
func (f Failures) Err() error {
	if len(f) == 0 {
		return nil
	}
	return f
}

// permanent marks a cause no retry can fix.
type permanent struct{ err error }

func (p permanent) Error() string { return p.err.Error() }
func (p permanent) Unwrap() error { return p.err }

// Permanent marks err, an entry's cause in Failures, as one no retry can
// fix (a malformed entry): the entry is dead-lettered at once.
func Permanent(err error) error { return permanent{err} }

// IsPermanent reports whether err was marked by Permanent.
func IsPermanent(err error) bool {
	var p permanent
	return errors.As(err, &p)
}

// pendingOf returns the pending record of each of ids — its consumer and
// delivery count, which survives restarts and claims — in one round trip.
// An ID not pending is absent.
func pendingOf(ctx context.Context, rdb redis.UniversalClient, stream, group string, ids []string) (map[string]redis.XPendingExt, error) {
	cmds := make([]*redis.XPendingExtCmd, len(ids))
	_, err := rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, id := range ids {
			cmds[i] = p.XPendingExt(ctx, &redis.XPendingExtArgs{Stream: stream, Group: group, Start: id, End: id, Count: 1})
		}
		return nil
	})
	if err != nil && !errors.Is(err, redis.Nil) {
		return nil, fmt.Errorf("delivery counts of %d entries of %s: %w", len(ids), stream, err)
	}
	out := make(map[string]redis.XPendingExt, len(ids))
	for _, c := range cmds {
		for _, p := range c.Val() {
			out[p.ID] = p
		}
	}
	return out, nil
}

// settleFailures retries or dead-letters the entries of batch the handler
// failed: each is dead-lettered when its cause is Permanent or its
// deliveries exhaust the policy, and otherwise stays pending for
// retryDue. Dead-lettering that fails leaves the entries pending too.
func (c *Consumer) settleFailures(ctx context.Context, batch []redis.XMessage, f Failures) {
	var ids []string
	for _, m := range batch {
		if _, ok := f[m.ID]; ok {
			ids = append(ids, m.ID)
		}
	}
	if len(ids) == 0 {
		return
	}
	pending, err := pendingOf(ctx, c.rdb, c.cfg.Stream, c.cfg.Group, ids)
	if err != nil {
		c.log.Warn("failed entries left pending: delivery counts unknown", "count", len(ids), "err", err)
		return
	}
	var dead []Dead
	for _, m := range batch {
		cause, ok := f[m.ID]
		if !ok {
			continue
		}
		p, ok := pending[m.ID]
		n := p.RetryCount
		switch {
		case !ok || p.Consumer != c.cfg.Consumer: // acknowledged after all, or a peer's now
		case IsPermanent(cause) || c.cfg.Retry.Exhausted(n):
			dead = append(dead, Dead{Entry: m, Attempts: n, Err: cause})
		default:
			c.log.Debug("entry failed, will retry", "entry", m.ID, "attempts", n, "retry_in", c.retryIdle(n), "err", cause)
		}
	}
	if len(dead) == 0 {
		return
	}
	if c.cfg.DeadLetter == nil {
		c.log.Error("entries out of attempts left pending: no dead-letter stream", "count", len(dead), "first", dead[0].Entry.ID)
		return
	}
	if err := c.cfg.DeadLetter.DeadLetter(ctx, dead); err != nil {
		if errors.Is(err, ErrFenced) {
			c.fenced = true
			return
		}
		c.log.Warn("dead-lettering failed; the entries stay pending", "count", len(dead), "first", dead[0].Entry.ID, "err", err)
	}
}

// retryIdle is how long an entry delivered attempts times stays pending
// before retryDue takes it again: ClaimMinIdle (it is in no consumer's
// hands any more), and at least the policy's delay.
func (c *Consumer) retryIdle(attempts int64) time.Duration {
	return max(c.cfg.ClaimMinIdle, c.cfg.Retry.Delay(attempts))
}
