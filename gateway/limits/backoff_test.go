package limits

import (
	"context"
	"testing"
	"time"

	"github.com/nexo-im/nexo/store/storetest"
)

func TestBackoffWait(t *testing.T) {
	b := BackoffOf(Rule{Rate: 5, Period: time.Minute, Burst: 5}, 15*time.Minute, time.Hour)
	for k, want := range map[int]time.Duration{
		1: 0, 5: 0, 6: 24 * time.Second, 7: 48 * time.Second, 8: 96 * time.Second,
		10: 384 * time.Second, 11: 768 * time.Second, 12: 15 * time.Minute, 100: 15 * time.Minute, maxCounted: 15 * time.Minute,
	} {
		if got := b.Wait(k); got != want {
			t.Errorf("Wait(%d) = %v, want %v", k, got, want)
		}
	}
	for _, off := range []Backoff{
		BackoffOf(Rule{}, time.Minute, time.Hour),
		BackoffOf(Rule{Rate: 1, Period: time.Second, Burst: 1}, 0, time.Hour),
		BackoffOf(Rule{Rate: 1, Period: time.Second, Burst: 1}, time.Minute, 0),
	} {
		if !off.Off() || off.Wait(50) != 0 {
			t.Errorf("%+v must be off", off)
		}
	}
}

// TestBackoffShared: failures counted on one instance block the subject
// on another; each further failure doubles the block up to Max; a Reset
// forgets the count. Short durations, polled with a deadline; real Redis
// and the embedded one.
func TestBackoffShared(t *testing.T) {
	for name, open := range storetest.RedisBackends() {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			rdb, keys := open(t)
			t.Cleanup(func() { storetest.DeletePrefix(rdb, "rate:"+keys.Prefix) })
			a := New(rdb, keys.Prefix, nil, nil)
			b := Backoff{Free: 2, Base: 50 * time.Millisecond, Max: 200 * time.Millisecond, Window: time.Hour}
			ctx := context.Background()
			// A fresh limiter per check: no local memory, Redis answers.
			blocked := func() error { return New(rdb, keys.Prefix, nil, nil).Blocked(ctx, "lb", "x") }
			waitFree := func() {
				t.Helper()
				deadline := time.Now().Add(5 * time.Second)
				for blocked() != nil {
					if time.Now().After(deadline) {
						t.Fatal("still blocked after 5 s")
					}
					time.Sleep(5 * time.Millisecond)
				}
			}
			for i := range 2 {
				if w := a.Failed(ctx, "lb", "x", b); w != 0 {
					t.Fatalf("free failure %d blocked %v", i+1, w)
				}
			}
			if err := blocked(); err != nil {
				t.Fatalf("blocked after free failures: %v", err)
			}
			for i, want := range []time.Duration{100 * time.Millisecond, 200 * time.Millisecond, 200 * time.Millisecond} {
				failedAt := time.Now()
				if w := a.Failed(ctx, "lb", "x", b); w != want {
					t.Fatalf("failure %d: block %v, want %v", i+3, w, want)
				}
				got := refusedAfter(t, blocked())
				if low := want - time.Since(failedAt) - 5*time.Millisecond; got < low || got > want+5*time.Millisecond {
					t.Fatalf("failure %d: retry after %v, want about %v", i+3, got, want)
				}
				// The instance that blocked remembers it in process.
				refusedAfter(t, a.Blocked(ctx, "lb", "x"))
				waitFree()
			}
			if err := a.Reset(ctx, "lb", "x"); err != nil {
				t.Fatal(err)
			}
			for i := range 2 {
				if w := a.Failed(ctx, "lb", "x", b); w != 0 {
					t.Fatalf("after reset, failure %d blocked %v", i+1, w)
				}
			}
			if w := a.Failed(ctx, "lb", "x", b); w != 100*time.Millisecond {
				t.Fatalf("after reset, third failure blocked %v, want 100ms", w)
			}
		})
	}
}
