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
			b.ResetTimer()
			c0 := processCPU()
			for i := 0; i < b.N; i++ {
				m := textMsg(fmt.Sprint("u", i%50), fmt.Sprint("v", i%50), fmt.Sprint("c", i), int64(i+1))
				m.AtUserIDs = nil
				if _, err := repo.SaveBatch(ctx, []domain.Message{m}); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64((processCPU()-c0).Microseconds())/float64(b.N), "cpu-us/op")
		})
	}
}

// BenchmarkByClientMsgIDs runs the accept-time duplicate lookup of one
// key, as at light load (under load concurrent sends share one query),
// alternately for a saved message and for a new one, on each backend;
// cpu-us/op as in BenchmarkSaveBatch.
func BenchmarkByClientMsgIDs(b *testing.B) {
	for _, be := range storetest.Backends() {
		b.Run(be.Name, func(b *testing.B) {
			repo := store.NewMessageRepo(be.Open(b))
			ctx := context.Background()
			const saved = 100
			for i := 0; i < saved; i++ {
				m := textMsg("alice", "bob", fmt.Sprint("c", i), int64(i+1))
				if _, err := repo.SaveBatch(ctx, []domain.Message{m}); err != nil {
					b.Fatal(err)
				}
			}
			b.ResetTimer()
			c0 := processCPU()
			for i := 0; i < b.N; i++ {
				n := i % (2 * saved) // below saved: a saved message; above: a new one
				key := domain.ClientMsgKey{SenderID: "alice", ClientMsgID: fmt.Sprint("c", n)}
				found, err := repo.ByClientMsgIDs(ctx, []domain.ClientMsgKey{key})
				if err != nil || (len(found) == 1) != (n < saved) {
					b.Fatalf("lookup %d: %d found, %v", i, len(found), err)
				}
			}
			b.ReportMetric(float64((processCPU()-c0).Microseconds())/float64(b.N), "cpu-us/op")
		})
	}
}

// processCPU is this process's user+system CPU time (getrusage).
func processCPU() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
