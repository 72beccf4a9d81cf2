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

// Synced is a Rule checked in Redis about once per quota (rate ×
// SyncInterval requests: 10 at 100/s) per subject and instance while the
// subject has plenty of budget left, instead of once per request. It is
// for limits on the message hot path, where a Redis round trip per request
// would cost more than the limit protects (docs/security.md: a user at
// 50 msg/s costs 10 checks/s, not 50, and none of them in the request's
// way).
//
// How: each check charges Redis with every request admitted since the last
// one (chargeScript: always charged, also past the budget, so nothing
// admitted goes unpaid) and learns how many more would fit. While that is
// at least the headroom (two quotas and one), the instance admits a quota
// from memory within the next SyncInterval, then checks beside the request
// that used the quota up (admitted) while admitting up to a quota more
// until Redis answers: all of it within what Redis had left. Below the
// headroom the subject is near its limit, and every request asks Redis
// and waits for the answer: exact, and what it costs a subject at its
// limit is a round trip per admitted request (a refusal is remembered
// until its retry time, so refused requests cost none).
//
// What it gives up: the budget an instance counts on may be spent by
// another instance meanwhile, so with several instances a subject may
// pass its limit by up to two quotas per instance, paid back by waiting
// longer afterwards. A rule whose burst is below the headroom is checked
// on every request, and so is one slower than 1 per SyncInterval.
type Synced struct {
	l        *Limiter
	kind     string
	rule     Rule
	quota    int // requests admitted from memory per check
	headroom int // budget left in Redis that lets this instance batch

	shards   [64]syncShard
	inflight sync.WaitGroup // checks running beside their requests
}

type syncShard struct {
	mu      sync.Mutex
	subject map[string]*syncState
	inserts int
}

// syncState is what this instance admitted of one subject since it last
// asked Redis, and what Redis answered then.
type syncState struct {
	pending int       // admitted, not yet charged
	credit  int       // may still be admitted from memory before the next check
	checked time.Time // when Redis last answered; credit lapses SyncInterval later
	syncing bool      // a check runs beside the request that started it
	tight   bool      // Redis left less than the headroom: every request asks
}

// NewSynced returns rule under kind (metrics label, key part), checked as
// Synced describes.
func NewSynced(l *Limiter, kind string, rule Rule) *Synced {
	s := &Synced{l: l, kind: kind, rule: rule}
	if !rule.Off() {
		s.quota = int(float64(rule.Rate) * float64(SyncInterval) / float64(rule.Period))
		s.headroom = 2*s.quota + 1
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
	st := sh.state(key, now)
	switch {
	case st.credit > 0 && now.Sub(st.checked) < SyncInterval:
		st.credit--
		st.pending++
		sh.mu.Unlock()
		return nil
	case st.syncing && !st.tight && st.pending < s.quota:
		// Redis answers slower than the credit lasted: a quota more,
		// still within the headroom it reported.
		st.pending++
		sh.mu.Unlock()
		return nil
	case st.tight || st.syncing:
		// Near the limit, or a whole quota came while a check is still
		// under way: this request waits for its own answer.
		n := st.pending
		st.pending, st.credit = 0, 0
		sh.mu.Unlock()
		return s.check(ctx, sh, st, key, n, 1)
	}
	// Credit used up or lapsed: the check runs beside the request, which
	// the headroom covers, not in its way.
	n := st.pending + 1
	st.pending, st.credit, st.syncing = 0, 0, true
	sh.mu.Unlock()
	s.inflight.Add(1)
	go func() {
		defer s.inflight.Done()
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
		_ = s.check(cctx, sh, st, key, n, 0)
		cancel()
		sh.mu.Lock()
		st.syncing = false
		sh.mu.Unlock()
	}()
	return nil
}

// state returns key's state, created when missing; every 1024 creations
// in a shard, the states idle for a minute are dropped. Called with sh.mu
// held.
func (sh *syncShard) state(key string, now time.Time) *syncState {
	if st := sh.subject[key]; st != nil {
		return st
	}
	st := &syncState{}
	sh.subject[key] = st
	sh.inserts++
	if sh.inserts%1024 == 0 {
		for k, v := range sh.subject {
			if now.Sub(v.checked) > time.Minute && v.pending == 0 && !v.syncing {
				delete(sh.subject, k)
			}
		}
	}
	return st
}

// check charges key with charged requests already admitted and asks for
// ask (0 or 1) more, then sets what this instance may admit from memory.
// It returns nil when the asked request fits (or none was asked), else a
// refusal, after which key is refused from memory until Redis's retry
// time; an admitted batch that ran into debt holds key the same way.
// Redis unreachable: allowed (fail open), and a quota from memory until
// the next check.
func (s *Synced) check(ctx context.Context, sh *syncShard, st *syncState, key string, charged, ask int) error {
	res, err := s.l.charge(ctx, key, s.rule, charged, ask)
	now := s.l.now()
	sh.mu.Lock()
	st.checked = now
	switch {
	case err != nil:
		st.credit, st.tight = s.quota, false
	case res.remaining-st.pending >= s.headroom:
		// Requests admitted while this check ran are not in its answer.
		st.credit, st.tight = s.quota, false
	default:
		st.credit, st.tight = 0, true
	}
	sh.mu.Unlock()
	if err != nil {
		s.l.errors.Inc()
		s.l.log.WarnContext(ctx, "rate limit check failed; allowed", "limit", s.kind, "err", err)
		return nil
	}
	if (ask == 0 || res.allowed) && res.remaining >= 0 {
		return nil
	}
	wait := max(res.retryAfter, time.Millisecond)
	s.l.block(key, now.Add(wait))
	if ask == 0 || res.allowed {
		return nil // the debt holds the next requests, not this admitted one
	}
	s.l.refused.WithLabelValues(s.kind).Inc()
	return refusal(s.kind, wait)
}
