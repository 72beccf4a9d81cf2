package limits

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nexo-im/nexo/store/storetest"
)

// TestSyncedHoldsAFlooderWithARealClock: a user flooding from 8 goroutines
// for 2 s, on one instance and then spread over two, against the real
// Redis and the real clock, gets at most burst + rate × elapsed plus two
// quotas per instance; meanwhile a user well under the rate on the same
// instances is never refused. ws.rate_limit's default rule (100/s, burst
// 200).
func TestSyncedHoldsAFlooderWithARealClock(t *testing.T) {
	for _, instances := range []int{1, 2} {
		t.Run(map[int]string{1: "one instance", 2: "two instances"}[instances], func(t *testing.T) {
			rdb, prefix := storetest.Redis(t)
			counter := &scriptCounter{}
			rdb.AddHook(counter)
			const rate, burst = 100, 200
			rule := PerSecond(rate, burst)
			var lims []*Synced
			for range instances {
				lims = append(lims, NewSynced(New(rdb, prefix, nil, nil), KindUser, rule))
			}
			ctx := context.Background()
			const flood = 2 * time.Second
			start := time.Now()
			deadline := start.Add(flood)

			var accepted, refused atomic.Int64
			var wg sync.WaitGroup
			for g := range 8 {
				s := lims[g%instances]
				wg.Add(1)
				go func() {
					defer wg.Done()
					for time.Now().Before(deadline) {
						if s.Allow(ctx, "flooder") == nil {
							accepted.Add(1)
						} else {
							refused.Add(1)
						}
					}
				}()
			}
			// The calm user: 80 requests a second, alternating instances.
			var calmRefusals []error
			wg.Add(1)
			go func() {
				defer wg.Done()
				tick := time.NewTicker(time.Second / 80)
				defer tick.Stop()
				for i := 0; time.Now().Before(deadline); i++ {
					<-tick.C
					if err := lims[i%instances].Allow(ctx, "calm"); err != nil {
						calmRefusals = append(calmRefusals, err)
					}
				}
			}()
			wg.Wait()
			for _, s := range lims {
				s.inflight.Wait()
			}
			elapsed := time.Since(start)

			quota := lims[0].quota
			most := burst + rate*elapsed.Seconds() + float64(2*quota*instances)
			got := float64(accepted.Load())
			t.Logf("%d instance(s), %v: accepted %d (%.0f/s), refused %d; bound %.0f; %d Redis checks (%.0f/s)",
				instances, elapsed.Round(time.Millisecond), accepted.Load(), got/elapsed.Seconds(), refused.Load(),
				most, counter.n.Load(), float64(counter.n.Load())/elapsed.Seconds())
			if got > most {
				t.Errorf("the flooder got %.0f requests in %v, want at most burst %d + %d/s × elapsed + 2 quotas of %d per instance = %.0f",
					got, elapsed, burst, rate, quota, most)
			}
			if least := burst + rate*flood.Seconds()/2; got < least {
				t.Errorf("the flooder got only %.0f requests in %v: starved below %.0f", got, elapsed, least)
			}
			if len(calmRefusals) > 0 {
				t.Errorf("the calm user (80/s) was refused %d times, first: %v", len(calmRefusals), calmRefusals[0])
			}
		})
	}
}
