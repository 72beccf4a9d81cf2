package limits

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/nexo-im/nexo/store/storetest"
)

// scriptCounter counts the script calls a client makes (the GCRA checks).
type scriptCounter struct{ n atomic.Int64 }

func (c *scriptCounter) DialHook(next redis.DialHook) redis.DialHook { return next }
func (c *scriptCounter) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if strings.HasPrefix(cmd.Name(), "eval") {
			c.n.Add(1)
		}
		return next(ctx, cmd)
	}
}
func (c *scriptCounter) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// TestSyncedChargesEveryRequestOnceInBatches: within one SyncInterval an
// instance admits up to rate × interval requests from memory, then charges
// them all with one check that runs beside the request; when the shared
// budget runs out the subject is refused (late by at most one interval's
// quota) on this instance and, after its first check, on another one. A slow rule is checked on every request. Time stands still
// here (a fake clock), so only the batching decides.
func TestSyncedChargesEveryRequestOnceInBatches(t *testing.T) {
	rdb, prefix := storetest.Redis(t)
	counter := &scriptCounter{}
	rdb.AddHook(counter)
	t.Cleanup(func() { storetest.DeletePrefix(rdb, "rate:"+prefix) })
	ctx := context.Background()
	now := time.Now()
	a, b := New(rdb, prefix, nil, nil), New(rdb, prefix, nil, nil)
	a.now, b.now = func() time.Time { return now }, func() time.Time { return now }
	const burst = 20
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
	for range 100 {
		if refusal = allow(sa, "ann"); refusal != nil {
			break
		}
		admitted++
	}
	refusedAfter(t, refusal)
	if admitted < burst || admitted > burst+sa.quota+1 {
		t.Fatalf("admitted %d before the refusal, want the burst (%d) plus at most one quota (%d) and the request whose check refused", admitted, burst, sa.quota)
	}
	if calls := counter.n.Load(); calls > int64(admitted/sa.quota+2) {
		t.Fatalf("%d checks in Redis for %d requests: not batched", calls, admitted)
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
