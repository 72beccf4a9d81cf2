// Package limits is Nexo's rate limiting, shared by every instance and both
// transports: generic cell rate limits (GCRA) kept in Redis through
// github.com/go-redis/redis_rate, one Redis key per limited subject and one
// script call per check, so it works on Redis Cluster unchanged.
//
// A subject that was refused is remembered in process until its retry time,
// so a client hammering past its limit costs no Redis call per refused
// request (the local pre-check); an allowed request costs exactly one. When
// Redis cannot be reached the limiter fails open (allows, counts
// nexo_rate_limit_errors_total): a limiter outage must not become a chat
// outage, and Redis being down stops sends anyway.
package limits

import (
	"context"
	"fmt"
	"hash/maphash"
	"log/slog"
	"sync"
	"time"

	"github.com/go-redis/redis_rate/v10"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"

	"github.com/nexo-im/nexo/gateway/wire"
)

// Rule is one limit: Rate events per Period with bursts of up to Burst.
// The zero Rule (Rate 0) allows everything.
type Rule struct {
	Rate   int
	Period time.Duration
	Burst  int
}

// PerSecond turns a rate in events per second (ws.rate_limit, which may be
// fractional) and a burst into a Rule.
func PerSecond(perSecond float64, burst int) Rule {
	if perSecond <= 0 {
		return Rule{}
	}
	return Rule{Rate: 1, Period: time.Duration(float64(time.Second) / perSecond), Burst: burst}
}

// Off reports whether r allows everything.
func (r Rule) Off() bool { return r.Rate <= 0 || r.Period <= 0 }

func (r Rule) limit() redis_rate.Limit {
	return redis_rate.Limit{Rate: r.Rate, Period: r.Period, Burst: max(r.Burst, 1)}
}

// Limiter checks Rules against Redis. It is safe for concurrent use.
type Limiter struct {
	rl     *redis_rate.Limiter
	rdb    redis.UniversalClient // for chargeScript
	prefix string
	log    *slog.Logger
	now    func() time.Time

	seed   maphash.Seed
	shards [64]blockShard

	refused *prometheus.CounterVec
	errors  prometheus.Counter
	local   prometheus.Counter
}

type blockShard struct {
	mu      sync.Mutex
	until   map[string]time.Time
	inserts int
}

// New returns a Limiter on rdb. keyPrefix is redis.key_prefix; keys are
// "rate:<prefix>:rl:<kind>:<subject>" (redis_rate adds "rate:"), each a
// single key, with a TTL of at most one burst's worth of time. reg may be
// nil (metrics unregistered).
func New(rdb redis.UniversalClient, keyPrefix string, reg prometheus.Registerer, log *slog.Logger) *Limiter {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	l := &Limiter{
		rl: redis_rate.NewLimiter(rdb), rdb: rdb, prefix: keyPrefix + ":rl:", log: log, now: time.Now, seed: maphash.MakeSeed(),
		refused: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "nexo", Name: "rate_limited_total",
			Help: "Requests refused with too_many_requests, by limit (user, login_ip, login_account, register_ip, group_invite).",
		}, []string{"limit"}),
		errors: prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: "nexo", Name: "rate_limit_errors_total",
			Help: "Limit checks that could not reach Redis and were allowed (fail open).",
		}),
		local: prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: "nexo", Name: "rate_limited_local_total",
			Help: "Refusals answered from the in-process memory of a refused subject, without a Redis call.",
		}),
	}
	for i := range l.shards {
		l.shards[i].until = map[string]time.Time{}
	}
	if reg != nil {
		reg.MustRegister(l.refused, l.errors, l.local)
	}
	return l
}

// Allow counts one event of subject under rule and returns nil when it is
// allowed, or a too_many_requests *wire.Error whose RetryAfter says when
// the next one will be. kind names the limit (metrics label and key part).
func (l *Limiter) Allow(ctx context.Context, kind, subject string, rule Rule) error {
	return l.AllowN(ctx, kind, subject, rule, 1)
}

// AllowN is Allow for n events at once (all or none are counted). More
// than the rule's burst can never pass: that is a bad_request, not a
// retry-after.
func (l *Limiter) AllowN(ctx context.Context, kind, subject string, rule Rule, n int) error {
	if rule.Off() || n <= 0 {
		return nil
	}
	if n > max(rule.Burst, 1) {
		l.refused.WithLabelValues(kind).Inc()
		return wire.NewError(wire.ReasonBadRequest, fmt.Sprintf("%d at once is more than the %s limit ever allows (burst %d)", n, kind, max(rule.Burst, 1)))
	}
	key := kind + ":" + subject
	now := l.now()
	if wait := l.blocked(key, now); wait > 0 {
		l.local.Inc()
		l.refused.WithLabelValues(kind).Inc()
		return refusal(kind, wait)
	}
	res, err := l.rl.AllowN(ctx, l.prefix+key, rule.limit(), n)
	if err != nil {
		l.errors.Inc()
		l.log.WarnContext(ctx, "rate limit check failed; allowed", "limit", kind, "err", err)
		return nil
	}
	if res.Allowed > 0 {
		return nil
	}
	if n == 1 { // a smaller request may pass before a larger one's retry time
		l.block(key, now.Add(res.RetryAfter))
	}
	l.refused.WithLabelValues(kind).Inc()
	return refusal(kind, res.RetryAfter)
}

// Reset forgets subject's history under kind, its backoff (failure count
// and block) included: a successful login clears its account's failures.
func (l *Limiter) Reset(ctx context.Context, kind, subject string) error {
	keys := []string{kind + ":" + subject, failKey(kind) + subject, blockKey(kind) + subject}
	for _, k := range keys {
		sh := l.shard(k)
		sh.mu.Lock()
		delete(sh.until, k)
		sh.mu.Unlock()
	}
	// One key per call: the three may sit in different Cluster slots.
	for _, k := range keys {
		if err := l.rl.Reset(ctx, l.prefix+k); err != nil {
			return err
		}
	}
	return nil
}

func refusal(kind string, wait time.Duration) *wire.Error {
	e := wire.NewError(wire.ReasonTooManyRequests, fmt.Sprintf("over the %s rate limit; retry in %s", kind, wait.Round(time.Millisecond)))
	e.RetryAfter = wait
	return e
}

func (l *Limiter) shard(key string) *blockShard {
	return &l.shards[maphash.String(l.seed, key)%uint64(len(l.shards))]
}

// blocked returns how long key is still known to be refused (0: ask Redis).
func (l *Limiter) blocked(key string, now time.Time) time.Duration {
	sh := l.shard(key)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	until, ok := sh.until[key]
	if !ok {
		return 0
	}
	if wait := until.Sub(now); wait > 0 {
		return wait
	}
	delete(sh.until, key)
	return 0
}

// block remembers that key is refused until until. Every 1024 insertions
// into a shard, expired entries are dropped, so subjects that never come
// back do not accumulate.
func (l *Limiter) block(key string, until time.Time) {
	sh := l.shard(key)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	sh.until[key] = until
	sh.inserts++
	if sh.inserts%1024 == 0 {
		now := l.now()
		for k, u := range sh.until {
			if !u.After(now) {
				delete(sh.until, k)
			}
		}
	}
}
