package store_test

import (
	"context"
	"fmt"
	"syscall"
	"testing"
	"time"

	"github.com/nexo-im/nexo/domain"
	"github.com/nexo-im/nexo/store"
	"github.com/nexo-im/nexo/store/storetest"
)

// BenchmarkSaveBatch saves batches of one single-chat message, the light
// load's batch, on each backend. Besides ns/op (which includes waiting for
// the database) it reports cpu-us/op: this process's user+system CPU per
// batch (getrusage), the figure the save stage costs the server.
func BenchmarkSaveBatch(b *testing.B) {
	for _, be := range storetest.Backends() {
		b.Run(be.Name, func(b *testing.B) {
			repo := store.NewMessageRepo(be.Open(b))
			ctx := context.Background()
			cpu := func() time.Duration {
				var ru syscall.Rusage
				_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
				return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
			}
			b.ResetTimer()
			c0 := cpu()
			for i := 0; i < b.N; i++ {
				m := textMsg(fmt.Sprint("u", i%50), fmt.Sprint("v", i%50), fmt.Sprint("c", i), int64(i+1))
				m.AtUserIDs = nil
				if _, err := repo.SaveBatch(ctx, []domain.Message{m}); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64((cpu()-c0).Microseconds())/float64(b.N), "cpu-us/op")
		})
	}
}
