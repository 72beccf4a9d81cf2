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

// BenchmarkSaveFloor is what the database costs per message at a batch
// size, the whole of the database's share of the pipeline: the accept-time
// duplicate lookup (one query for the batch's keys, as concurrent sends
// share one) and the save (one batch of single-chat messages over 50
// conversations, in sequence). cpu-us/msg is this process's CPU per
// message; db-cpu-us/msg the database server's, when it runs on this
// machine as mariadbd or mysqld (read from /proc). docs/bench/README.md
// ("What two cores can hold") quotes it. Run:
// go test -run '^$' -bench SaveFloor -benchtime 1000x ./store
func BenchmarkSaveFloor(b *testing.B) {
	for _, size := range []int{1, 10, 100, 400} {
		b.Run(fmt.Sprintf("mariadb/batch=%d", size), func(b *testing.B) {
			repo := store.NewMessageRepo(storetest.MySQL(b))
			ctx := context.Background()
			dbPID := storetest.LocalProcess("mariadbd", "mysqld")
			seq := map[string]int64{}
			batch := make([]domain.Message, size)
			keys := make([]domain.ClientMsgKey, size)
			n := 0
			b.ResetTimer()
			c0, d0 := processCPU(), storetest.ProcessCPU(dbPID)
			for i := 0; i < b.N; i++ {
				for j := range batch {
					u, v := fmt.Sprint("u", n%50), fmt.Sprint("v", n%50)
					m := textMsg(u, v, fmt.Sprint("c", n), 0)
					seq[m.ConversationID]++
					m.Seq = seq[m.ConversationID]
					m.ServerMsgID = fmt.Sprint("srv-", n)
					m.AtUserIDs = nil
					batch[j], keys[j] = m, domain.ClientMsgKey{SenderID: u, ClientMsgID: m.ClientMsgID}
					n++
				}
				if found, err := repo.ByClientMsgIDs(ctx, keys); err != nil || len(found) != 0 {
					b.Fatalf("lookup: %d found, %v", len(found), err)
				}
				if _, err := repo.SaveBatch(ctx, batch); err != nil {
					b.Fatal(err)
				}
			}
			msgs := float64(b.N * size)
			b.ReportMetric(float64((processCPU()-c0).Microseconds())/msgs, "cpu-us/msg")
			if dbPID > 0 {
				b.ReportMetric(float64((storetest.ProcessCPU(dbPID)-d0).Microseconds())/msgs, "db-cpu-us/msg")
			}
		})
	}
}
