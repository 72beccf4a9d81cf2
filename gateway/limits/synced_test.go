package limits

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"
)

// scriptCounter counts the script calls a client makes (the GCRA checks);
// an EVALSHA refused with NOSCRIPT, which go-redis follows with the EVAL
// that loads the script, is not a second check.
type scriptCounter struct{ n atomic.Int64 }

func (c *scriptCounter) DialHook(next redis.DialHook) redis.DialHook { return next }
func (c *scriptCounter) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		err := next(ctx, cmd)
		if strings.HasPrefix(cmd.Name(), "eval") && !redis.HasErrorPrefix(err, "NOSCRIPT") {
			c.n.Add(1)
		}
		return err
	}
}
func (c *scriptCounter) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// TestSyncedChargesEveryRequestOnceInBatches: while a subject has budget
// to spare, an instance admits a quota (rate × interval) from memory and
// charges it with one check that runs beside the request; near the end of
// the budget every request asks Redis, so a lone instance admits exactly
// the burst. Another instance learns of the spent budget at its first
// check: the request that triggered it was admitted beside the check and
// is charged as debt. A slow rule is checked on every request. Time stands
// still here, in the instances (a fake clock) and in Redis (the embedded
// one, whose TIME the script reads, frozen), so only the batching decides;
// TestSyncedHoldsAFlooderWithARealClock runs against real time.
func TestSyncedChargesEveryRequestOnceInBatches(t *testing.T) {
	now := time.Now()
	mr := miniredis.RunT(t)
	mr.SetTime(now)
	rdb := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	t.Cleanup(func() { _ = rdb.Close() })
	prefix := "nexo"
	counter := &scriptCounter{}
	rdb.AddHook(counter)
	ctx := context.Background()
	a, b := New(rdb, prefix, nil, nil), New(rdb, prefix, nil, nil)
	a.now, b.now = func() time.Time { return now }, func() time.Time { return now }
	const burst = 100
	rule := PerSecond(100, burst) // quota: 10 per 100 ms
	sa, sb := NewSynced(a, "t", rule), NewSynced(b, "t", rule)

	// Each check runs beside its request: waiting for it after every
	// request makes the sequence deterministic.
	allow := func(s *Synced, subject string) error {
		err := s.Allow(ctx, subject)
		s.inflight.Wait()
		return err
	}
	admitted := 0
	var refusal error
	for range 2 * burst {
		if refusal = allow(sa, "ann"); refusal != nil {
			break
		}
		admitted++
	}
	refusedAfter(t, refusal)
	if admitted != burst {
		t.Fatalf("admitted %d before the refusal, want exactly the burst (%d)", admitted, burst)
	}
	// Batched while the budget lasts (one check per quota), then one per
	// request for the last headroom's worth and the refusal.
	if calls, most := counter.n.Load(), int64(burst/sa.quota+sa.headroom+1); calls > most {
		t.Fatalf("%d checks in Redis for %d requests, want at most %d: not batched", calls, admitted, most)
	}
	// Another instance learns of the spent budget at its first check: that
	// request goes through (the check runs beside it), the next is refused.
	if err := allow(sb, "ann"); err != nil {
		t.Fatalf("b's first request: %v (its check runs beside it)", err)
	}
	refusedAfter(t, allow(sb, "ann"))
	// Another subject has its own budget.
	if err := allow(sb, "bob"); err != nil {
		t.Fatalf("bob: %v", err)
	}

	// 1 per second is below one per interval: every request asks Redis.
	slow := NewSynced(a, "slow", PerSecond(1, 2))
	before := counter.n.Load()
	for i := range 2 {
		if err := slow.Allow(ctx, "cat"); err != nil {
			t.Fatalf("slow request %d: %v", i+1, err)
		}
	}
	refusedAfter(t, slow.Allow(ctx, "cat"))
	if calls := counter.n.Load() - before; calls != 3 {
		t.Fatalf("slow rule: %d checks for 3 requests, want 3", calls)
	}
}
