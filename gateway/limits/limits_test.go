package limits

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/redis/go-redis/v9"

	"github.com/nexo-im/nexo/gateway/wire"
	"github.com/nexo-im/nexo/store/storetest"
)

func refusedAfter(t *testing.T, err error) time.Duration {
	t.Helper()
	var we *wire.Error
	if !errors.As(err, &we) || we.Reason != wire.ReasonTooManyRequests || we.RetryAfter <= 0 {
		t.Fatalf("got %v, want too_many_requests with a retry-after", err)
	}
	return we.RetryAfter
}

// TestLimiterShared: two limiters on one Redis (two instances) share a
// subject's budget; a refusal carries the retry-after; later refusals come
// from the local memory without a Redis call; Reset clears; other subjects
// are independent. Runs on the real Redis and the embedded one.
func TestLimiterShared(t *testing.T) {
	for name, open := range storetest.RedisBackends() {
		t.Run(name, func(t *testing.T) {
			rdb, keys := open(t)
			a := New(rdb, keys.Prefix, nil, nil)
			b := New(rdb, keys.Prefix, nil, nil)
			t.Cleanup(func() { _ = a.Reset(context.Background(), "t", "alice"); _ = a.Reset(context.Background(), "t", "bob") })
			ctx := context.Background()
			rule := Rule{Rate: 1, Period: time.Hour, Burst: 3}
			for i, l := range []*Limiter{a, b, a} {
				if err := l.Allow(ctx, "t", "alice", rule); err != nil {
					t.Fatalf("request %d: %v", i+1, err)
				}
			}
			wait := refusedAfter(t, b.Allow(ctx, "t", "alice", rule))
			if wait < 50*time.Minute || wait > time.Hour {
				t.Fatalf("retry after %v, want about the emission interval (1h)", wait)
			}
			refusedAfter(t, b.Allow(ctx, "t", "alice", rule))
			if n := testutil.ToFloat64(b.local); n != 1 {
				t.Fatalf("local refusals %v, want 1 (the second refusal needed no Redis call)", n)
			}
			if err := a.Allow(ctx, "t", "bob", rule); err != nil {
				t.Fatalf("bob: %v", err)
			}
			if err := b.Reset(ctx, "t", "alice"); err != nil {
				t.Fatal(err)
			}
			if err := b.Allow(ctx, "t", "alice", rule); err != nil {
				t.Fatalf("after reset: %v", err)
			}
		})
	}
}

// TestLimiterFailsOpen: with Redis unreachable every check is allowed and
// counted.
func TestLimiterFailsOpen(t *testing.T) {
	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", MaxRetries: -1, DialTimeout: 200 * time.Millisecond})
	defer rdb.Close()
	l := New(rdb, "x", nil, nil)
	for range 3 {
		if err := l.Allow(context.Background(), "t", "u", Rule{Rate: 1, Period: time.Hour, Burst: 1}); err != nil {
			t.Fatal(err)
		}
	}
	if n := testutil.ToFloat64(l.errors); n != 3 {
		t.Fatalf("errors %v, want 3", n)
	}
}

func TestPerSecond(t *testing.T) {
	if r := PerSecond(0, 10); !r.Off() {
		t.Fatal("0/s must be off")
	}
	if r := PerSecond(100, 200); r.Period != 10*time.Millisecond || r.Burst != 200 {
		t.Fatalf("100/s: %+v", r)
	}
}

// TestAllowNCountsEveryEvent: AllowN counts n events at once, shared across
// instances; a request that no longer fits is refused with a retry-after
// while a smaller one that fits still passes; more than the burst at once
// is bad_request (it could never pass). Invites is AllowN per user.
func TestAllowNCountsEveryEvent(t *testing.T) {
	for name, open := range storetest.RedisBackends() {
		t.Run(name, func(t *testing.T) {
			rdb, keys := open(t)
			a := New(rdb, keys.Prefix, nil, nil)
			b := New(rdb, keys.Prefix, nil, nil)
			ctx := context.Background()
			rule := Rule{Rate: 5, Period: time.Hour, Burst: 5}
			if err := a.AllowN(ctx, "n", "alice", rule, 3); err != nil {
				t.Fatal(err)
			}
			refusedAfter(t, b.AllowN(ctx, "n", "alice", rule, 3))
			if err := b.AllowN(ctx, "n", "alice", rule, 2); err != nil {
				t.Fatalf("two more within the burst: %v", err)
			}
			refusedAfter(t, a.AllowN(ctx, "n", "alice", rule, 1))
			var we *wire.Error
			if err := a.AllowN(ctx, "n", "bob", rule, 6); !errors.As(err, &we) || we.Reason != wire.ReasonBadRequest {
				t.Fatalf("more than the burst at once: %v", err)
			}
			inv := NewInvites(a, Rule{Rate: 2, Period: time.Hour, Burst: 2})
			if err := inv.AllowInvites(ctx, "carol", 2); err != nil {
				t.Fatal(err)
			}
			refusedAfter(t, inv.AllowInvites(ctx, "carol", 1))
			if err := (*Invites)(nil).AllowInvites(ctx, "carol", 100); err != nil {
				t.Fatalf("nil Invites limits: %v", err)
			}
		})
	}
}
