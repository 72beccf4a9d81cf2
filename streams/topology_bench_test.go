package streams_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/nexo-im/nexo/store/storetest"
	"github.com/nexo-im/nexo/streams"
)

// BenchmarkAcceptTopology measures the accept step (one Lua script per
// message, 16 senders in a closed loop, 64 conversations whose seq leases
// are taken before the clock starts) on each Redis
// topology, with and without the run_id fence and with accept_replicas 0
// and 1, and reports p50/p99 latency besides ns/op. docs/bench/redis-topologies.md
// quotes it. Run: go test -run '^$' -bench AcceptTopology -benchtime 5000x ./streams
func BenchmarkAcceptTopology(b *testing.B) {
	cases := []struct {
		name string
		open func(testing.TB) (redis.UniversalClient, string)
		opts []streams.AcceptOption
	}{
		{"standalone/unfenced", func(t testing.TB) (redis.UniversalClient, string) { return storetest.Redis(t) }, []streams.AcceptOption{streams.WithoutFence()}},
		{"standalone/fenced", func(t testing.TB) (redis.UniversalClient, string) { return storetest.Redis(t) }, nil},
		{"sentinel/replicas=0", storetest.RedisSentinel, nil},
		{"sentinel/replicas=1", storetest.RedisSentinel, []streams.AcceptOption{streams.WithReplicas(1, 100*time.Millisecond)}},
		{"cluster/replicas=0", storetest.RedisCluster, nil},
		{"cluster/replicas=1", storetest.RedisCluster, []streams.AcceptOption{streams.WithReplicas(1, 100*time.Millisecond)}},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			rdb, prefix := c.open(b)
			f := newFixtureOn(b, rdb, prefix, 100000)
			acc := streams.NewAccepter(rdb, streams.NewKeys(prefix, 8), f.seqs, 100000, time.Hour, c.opts...)
			ctx := context.Background()
			const senders = 16
			// Warm up: every conversation leases its first block now, so
			// the measured loop is the accept step, not MySQL.
			for s := 0; s < senders; s++ {
				for r := 0; r < 4; r++ {
					m := msg(fmt.Sprint("u", s), fmt.Sprint("r", r), fmt.Sprint("warm", r))
					if _, err := acc.Accept(ctx, streams.AcceptRequest{Msg: m, Route: streams.SaveFirst, Append: true}); err != nil {
						b.Fatal(err)
					}
				}
			}
			lat := make([]time.Duration, b.N)
			var next atomic.Int64
			var wg sync.WaitGroup
			b.ResetTimer()
			for s := 0; s < senders; s++ {
				wg.Add(1)
				go func(s int) {
					defer wg.Done()
					for {
						i := next.Add(1) - 1
						if i >= int64(b.N) {
							return
						}
						m := msg(fmt.Sprint("u", s), fmt.Sprint("r", i%4), fmt.Sprint("c", i))
						t0 := time.Now()
						if _, err := acc.Accept(ctx, streams.AcceptRequest{Msg: m, Route: streams.SaveFirst, Append: true}); err != nil {
							b.Error(err)
							return
						}
						lat[i] = time.Since(t0)
					}
				}(s)
			}
			wg.Wait()
			b.StopTimer()
			slices.Sort(lat)
			b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50_us")
			b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99_us")
		})
	}
}
