package limits

import (
	"context"
	"time"

	"github.com/go-redis/redis_rate/v10"
)

// Backoff makes a Rule's wait grow with failures (the login limits): the
// first Free failures cost nothing extra, then the failure number Free+j
// blocks the subject for Base·2^j, capped at Max. Failures are counted per
// subject in a GCRA counter (redis_rate, so the count is shared by every
// instance): each failure adds Window, and the sum drains in real time, so
// one failure is forgotten Window after it, n failures n·Window after the
// last. The zero Backoff (Base 0) is off.
type Backoff struct {
	Free   int
	Base   time.Duration
	Max    time.Duration
	Window time.Duration
}

// BackoffOf is the backoff of rule r: the first Burst failures are free
// (they are the rule's own burst), the next one waits twice the rule's own
// wait (Period/Rate), the next four times, and so on up to maxWait.
// maxWait or window 0, or an Off rule, turn it off.
func BackoffOf(r Rule, maxWait, window time.Duration) Backoff {
	if r.Off() || maxWait <= 0 || window <= 0 {
		return Backoff{}
	}
	return Backoff{Free: max(r.Burst, 1), Base: r.Period / time.Duration(r.Rate), Max: maxWait, Window: window}
}

// Off reports whether b never blocks.
func (b Backoff) Off() bool { return b.Base <= 0 || b.Max <= 0 || b.Window <= 0 }

// maxCounted bounds the failure count (the counter's burst); beyond it
// every failure waits Max.
const maxCounted = 1024

// Wait is the block that failure number k (1-based) of a subject earns: 0
// for the first Free, then Base·2^(k-Free) up to Max.
func (b Backoff) Wait(k int) time.Duration {
	j := k - b.Free
	if b.Off() || j <= 0 {
		return 0
	}
	if j > 40 || b.Base<<j > b.Max || b.Base<<j <= 0 {
		return b.Max
	}
	return b.Base << j
}

func (b Backoff) counter() redis_rate.Limit {
	return redis_rate.Limit{Rate: 1, Period: b.Window, Burst: maxCounted}
}

// probe is the limit a block key is checked with: with cost 0, redis_rate
// refuses while the key's time is more than a millisecond ahead (the
// block) and writes nothing otherwise.
var probe = redis_rate.Limit{Rate: 1, Period: time.Millisecond, Burst: 1}

func failKey(kind string) string  { return kind + "_fail:" }
func blockKey(kind string) string { return kind + "_block:" }

// Blocked returns nil unless subject is blocked by a backoff of kind (set
// by Failed on any instance): then too_many_requests with RetryAfter until
// the block ends. It counts nothing. Without Redis it allows (fail open).
// Check it before the rule's Allow: a block is longer than the rule's own
// wait, and a refusal should say the longer one. Refused subjects are
// remembered in process as with Allow.
func (l *Limiter) Blocked(ctx context.Context, kind, subject string) error {
	key := blockKey(kind) + subject
	now := l.now()
	if wait := l.blocked(key, now); wait > 0 {
		l.local.Inc()
		l.refused.WithLabelValues(kind).Inc()
		return refusal(kind, wait)
	}
	res, err := l.rl.AllowN(ctx, l.prefix+key, probe, 0)
	if err != nil {
		l.errors.Inc()
		l.log.WarnContext(ctx, "backoff check failed; allowed", "limit", kind, "err", err)
		return nil
	}
	if res.RetryAfter < 0 {
		return nil
	}
	wait := res.RetryAfter + probe.Period
	l.block(key, now.Add(wait))
	l.refused.WithLabelValues(kind).Inc()
	return refusal(kind, wait)
}

// Failed counts one failure of subject under kind and, past b.Free, blocks
// the subject for b.Wait of its count, on every instance. It returns the
// block (0: none). Redis errors are logged and the failure is not
// counted.
func (l *Limiter) Failed(ctx context.Context, kind, subject string, b Backoff) time.Duration {
	if b.Off() {
		return 0
	}
	res, err := l.rl.Allow(ctx, l.prefix+failKey(kind)+subject, b.counter())
	if err != nil {
		l.errors.Inc()
		l.log.WarnContext(ctx, "backoff count failed", "limit", kind, "err", err)
		return 0
	}
	k := maxCounted
	if res.Allowed > 0 {
		k = maxCounted - res.Remaining
	}
	wait := b.Wait(k)
	if wait <= 0 {
		return 0
	}
	// The block key's time moves to max(its time, now) + wait. Burst 2
	// accepts a block that has not quite ended (Blocked tolerates a
	// millisecond) or that a concurrent failure just set: then the two add
	// up, never past 2×Max.
	res, err = l.rl.Allow(ctx, l.prefix+blockKey(kind)+subject, redis_rate.Limit{Rate: 1, Period: wait, Burst: 2})
	if err != nil {
		l.errors.Inc()
		l.log.WarnContext(ctx, "backoff block failed", "limit", kind, "err", err)
		return 0
	}
	if res.Allowed == 0 {
		return res.RetryAfter
	}
	l.block(blockKey(kind)+subject, l.now().Add(res.ResetAfter))
	return wait
}
