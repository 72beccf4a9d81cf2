package store_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/nexo-im/nexo/domain"
	"github.com/nexo-im/nexo/store"
	"github.com/nexo-im/nexo/store/storetest"
)

// BenchmarkSearchIndex writes message_search rows through SearchRepo.Index
// in calls of 1 to 500 rows, the sizes the indexing stage writes at light
// load and under load. Besides ns/row it reports db-cpu-us/row, the local
// database server's CPU per indexed message (/proc; 0 when the server is
// not local), which is what indexing takes from the save on a shared
// database.
func BenchmarkSearchIndex(b *testing.B) {
	for _, be := range storetest.Backends() {
		b.Run(be.Name, func(b *testing.B) {
			ctx := context.Background()
			repo, err := store.NewSearchRepo(ctx, be.Open(b))
			if err != nil {
				b.Fatal(err)
			}
			db := storetest.LocalProcess("mariadbd", "mysqld")
			rng := rand.New(rand.NewPCG(3, 4))
			var seq int64
			for _, rows := range []int{1, 10, 100, 500} {
				b.Run(fmt.Sprint("rows=", rows), func(b *testing.B) {
					docs := make([]store.SearchDoc, rows)
					indexed := 0
					c0 := storetest.ProcessCPU(db)
					b.ResetTimer()
					for i := 0; i < b.N; i++ {
						for j := range docs {
							seq++
							docs[j] = store.SearchDoc{ConversationID: fmt.Sprint("si_u", seq%50, "_v"), Seq: seq,
								SessionType: domain.SessionSingle, SenderID: fmt.Sprint("u", seq%50), RecvID: "v",
								MsgType: domain.MsgText, SendAt: seq, Field: "text", Body: sampleText(rng)}
						}
						if err := repo.Index(ctx, docs); err != nil {
							b.Fatal(err)
						}
						indexed += rows
					}
					b.StopTimer()
					b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(indexed), "ns/row")
					if db > 0 && be.Name != "sqlite" {
						b.ReportMetric(float64((storetest.ProcessCPU(db)-c0).Microseconds())/float64(indexed), "db-cpu-us/row")
					}
				})
			}
		})
	}
}
