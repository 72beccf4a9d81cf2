package limits

import (
	"context"
	"hash/maphash"
	"sync"
	"time"
)

// SyncInterval is how long an instance may admit a subject's requests from
// memory before it reports them to Redis (Synced).
const SyncInterval = 100 * time.Millisecond

// Synced is a Rule checked in Redis at most once per SyncInterval per
// subject and instance while the subject stays within its rate, instead of
// once per request: the requests admitted in between are counted locally
// and charged to the shared budget with the next check (one GCRA call for
// all of them, redis_rate's AllowAtMost). The check runs beside the
// request that triggers it, which is admitted; a refusal holds the subject
// from the moment Redis answers. Only when a whole quota more arrives while
// a check is still under way does a request wait for Redis. It is for
// limits on the message hot path, where a Redis round trip per request
// would cost more than the limit protects (docs/security.md: a user at
// 50 msg/s costs 10 checks/s, not 50, and none of them in the request's
// way).
//
// What it gives up: within one interval an instance admits at most
// rate × SyncInterval requests of a subject (10 at 100/s), plus one quota
// while a check is under way, so a subject over its limit is refused up to
// about twice that many requests late per instance. A rule slower than 1
// per SyncInterval is checked on every request, exactly as Allow does.
type Synced struct {
	l     *Limiter
	kind  string
	rule  Rule
	quota int // requests admitted from memory per interval

	shards   [64]syncShard
	inflight sync.WaitGroup // checks running beside their requests
}

type syncShard struct {
	mu      sync.Mutex
	subject map[string]*syncState
	inserts int
}

// syncState is what this instance admitted of one subject since it last
// asked Redis.
type syncState struct {
	pending int
	checked time.Time
	syncing bool // a check of this subject is under way
}

// NewSynced returns rule under kind (metrics label, key part), checked as
// Synced describes.
func NewSynced(l *Limiter, kind string, rule Rule) *Synced {
	s := &Synced{l: l, kind: kind, rule: rule}
	if !rule.Off() {
		s.quota = int(float64(rule.Rate) * float64(SyncInterval) / float64(rule.Period))
	}
	for i := range s.shards {
		s.shards[i].subject = map[string]*syncState{}
	}
	return s
}

// Allow counts one request of subject: nil, or too_many_requests with
// RetryAfter (as Limiter.Allow).
func (s *Synced) Allow(ctx context.Context, subject string) error {
	if s.rule.Off() {
		return nil
	}
	if s.quota < 1 {
		return s.l.Allow(ctx, s.kind, subject, s.rule)
	}
	key := s.kind + ":" + subject
	now := s.l.now()
	if wait := s.l.blocked(key, now); wait > 0 {
		s.l.local.Inc()
		s.l.refused.WithLabelValues(s.kind).Inc()
		return refusal(s.kind, wait)
	}
	sh := &s.shards[maphash.String(s.l.seed, key)%uint64(len(s.shards))]
	sh.mu.Lock()
	st := sh.subject[key]
	if st == nil {
		st = &syncState{}
		sh.subject[key] = st
		sh.inserts++
		if sh.inserts%1024 == 0 {
			for k, v := range sh.subject {
				if now.Sub(v.checked) > time.Minute && v.pending == 0 {
					delete(sh.subject, k)
				}
			}
		}
	}
	if !st.checked.IsZero() && now.Sub(st.checked) < SyncInterval && st.pending < s.quota ||
		st.syncing && st.pending < s.quota {
		// Within the interval, or a check is under way: admitted, and
		// charged with the next check.
		st.pending++
		sh.mu.Unlock()
		return nil
	}
	n := st.pending + 1
	st.pending, st.checked = 0, now
	if st.syncing {
		// A check is still under way and a quota more came meanwhile
		// (Redis is slow): this one waits for its own answer.
		sh.mu.Unlock()
		return s.charge(ctx, key, n, now)
	}
	// The check runs beside the request, not in its way: the request is
	// admitted, and a refusal Redis answers holds the subject from then on.
	st.syncing = true
	sh.mu.Unlock()
	s.inflight.Add(1)
	go func() {
		defer s.inflight.Done()
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
		_ = s.charge(cctx, key, n, now)
		cancel()
		sh.mu.Lock()
		st.syncing = false
		sh.mu.Unlock()
	}()
	return nil
}

// charge counts n requests of key in Redis: nil while they fit, else a
// refusal, after which key is refused from memory until Redis's retry time.
// Redis unreachable: allowed (fail open).
func (s *Synced) charge(ctx context.Context, key string, n int, now time.Time) error {
	res, err := s.l.rl.AllowAtMost(ctx, s.l.prefix+key, s.rule.limit(), n)
	if err != nil {
		s.l.errors.Inc()
		s.l.log.WarnContext(ctx, "rate limit check failed; allowed", "limit", s.kind, "err", err)
		return nil
	}
	if res.Allowed >= n {
		return nil
	}
	wait := res.RetryAfter
	if wait <= 0 { // part of the batch fit: the next request fits one emission interval later
		wait = s.rule.Period / time.Duration(s.rule.Rate)
	}
	s.l.block(key, now.Add(wait))
	s.l.refused.WithLabelValues(s.kind).Inc()
	return refusal(s.kind, wait)
}
