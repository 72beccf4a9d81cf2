package limits

import (
	"context"
	"strconv"
	"testing"

	"github.com/nexo-im/nexo/store/storetest"
)

// BenchmarkUserAllow is the cost the per-user limit adds to one request:
// one GCRA script call on the test Redis (allowed path, 100 users, many
// goroutines as the gateway has). Compare with BenchmarkPing, a bare
// round trip on the same client. Run:
//
//	go test -run '^$' -bench 'UserAllow|Ping' ./gateway/limits/
func BenchmarkUserAllow(b *testing.B) {
	rdb, prefix := storetest.Redis(b)
	b.Cleanup(func() { storetest.DeletePrefix(rdb, "rate:"+prefix) })
	u := NewUserRequests(New(rdb, prefix, nil, nil), 1e6, 1e6)
	b.SetParallelism(8)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		i := 0
		for pb.Next() {
			if err := u.AllowRequest(context.Background(), "u"+strconv.Itoa(i%100)); err != nil {
				b.Fatal(err)
			}
			i++
		}
	})
}

// BenchmarkUserAllowEveryRequest is BenchmarkUserAllow with a Redis check
// on every request (Limiter.Allow), as before Synced: the difference is
// what batching the checks saves.
func BenchmarkUserAllowEveryRequest(b *testing.B) {
	rdb, prefix := storetest.Redis(b)
	b.Cleanup(func() { storetest.DeletePrefix(rdb, "rate:"+prefix) })
	l := New(rdb, prefix, nil, nil)
	rule := PerSecond(1e6, 1e6)
	b.SetParallelism(8)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		i := 0
		for pb.Next() {
			if err := l.Allow(context.Background(), KindUser, "u"+strconv.Itoa(i%100), rule); err != nil {
				b.Fatal(err)
			}
			i++
		}
	})
}

func BenchmarkPing(b *testing.B) {
	rdb, _ := storetest.Redis(b)
	b.SetParallelism(8)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if err := rdb.Ping(context.Background()).Err(); err != nil {
				b.Fatal(err)
			}
		}
	})
}
