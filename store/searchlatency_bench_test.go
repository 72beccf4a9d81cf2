package store_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nexo-im/nexo/domain"
	"github.com/nexo-im/nexo/store"
	"github.com/nexo-im/nexo/store/storetest"
)

// EnvSearchRows sets how many messages BenchmarkSearchLatency stores and
// indexes before it measures; unset, the benchmark skips (filling a
// million rows takes minutes).
const EnvSearchRows = "NEXO_BENCH_SEARCH_ROWS"

// The generated data set. The measured user, searcher, has
// searcherConvs single chats holding searcherShare of all messages; the
// rest are chats between other users, which the index holds and the
// visibility filter must leave out.
const (
	searcher      = "alice"
	searcherConvs = 100
	searcherShare = 10 // percent
	otherConvs    = 1000
	fillBatch     = 1000
)

// The keywords measured, planted at known rates among generated words.
var searchKeywords = []struct {
	name, keyword string
	every         int // one message in every
}{
	{"common-en", "weather", 100},
	{"rare-en", "zephyrine", 10000},
	{"cjk-2", "天气", 100},
}

// BenchmarkSearchLatency fills messages and message_search with
// NEXO_BENCH_SEARCH_ROWS messages (batched multi-row inserts: SaveBatch
// and Index, fillBatch at a time), then runs each keyword's search as
// searcher, across all its conversations and inside one, newest first,
// 20 a page. It reports p50-ms and p99-ms per query shape besides ns/op;
// run with -benchtime=200x for a fixed sample. The MariaDB database is
// dropped at the end (NEXO_TEST_KEEP_DB keeps it).
//
//	NEXO_BENCH_SEARCH_ROWS=1000000 NEXO_TEST_MYSQL_DSN=... \
//	  go test ./store -run '^$' -bench SearchLatency -benchtime=200x -timeout 2h
func BenchmarkSearchLatency(b *testing.B) {
	rows, _ := strconv.Atoi(os.Getenv(EnvSearchRows))
	if rows <= 0 {
		b.Skipf("set %s to the number of messages to store (e.g. 1000000)", EnvSearchRows)
	}
	for _, be := range storetest.Backends() {
		if only := os.Getenv("NEXO_BENCH_SEARCH_BACKEND"); only != "" && only != be.Name {
			continue
		}
		b.Run(be.Name, func(b *testing.B) {
			ctx := context.Background()
			db := be.Open(b)
			repo, err := store.NewSearchRepo(ctx, db)
			if err != nil {
				b.Fatal(err)
			}
			start := time.Now()
			fillSearch(b, ctx, store.NewMessageRepo(db), repo, rows)
			b.Logf("%s: stored and indexed %d messages in %s (%.0f msg/s)", be.Name, rows,
				time.Since(start).Round(time.Second), float64(rows)/time.Since(start).Seconds())
			inside := domain.SingleConversationID(searcher, "peer0")
			for _, k := range searchKeywords {
				for _, scope := range []struct{ name, conv string }{{"all", ""}, {"one", inside}} {
					b.Run(k.name+"/"+scope.name, func(b *testing.B) {
						q := store.SearchQuery{UserID: searcher, Keyword: k.keyword, ConversationID: scope.conv,
							Limit: 20, Timeout: 10 * time.Second}
						hits, err := repo.Search(ctx, q)
						if err != nil {
							b.Fatalf("warm-up search %q: %v", k.keyword, err)
						}
						took := make([]time.Duration, 0, b.N)
						b.ResetTimer()
						for i := 0; i < b.N; i++ {
							t0 := time.Now()
							if _, err := repo.Search(ctx, q); err != nil {
								b.Fatal(err)
							}
							took = append(took, time.Since(t0))
						}
						b.StopTimer()
						slices.Sort(took)
						b.ReportMetric(float64(len(hits)), "hits")
						b.ReportMetric(ms(took[len(took)/2]), "p50-ms")
						b.ReportMetric(ms(took[(len(took)*99)/100]), "p99-ms")
					})
				}
			}
		})
	}
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// fillSearch stores n generated messages and indexes them, fillBatch per
// statement. Seqs count up per conversation; send_at follows the order
// of generation.
func fillSearch(b *testing.B, ctx context.Context, msgs *store.MessageRepo, search *store.SearchRepo, n int) {
	b.Helper()
	rng := rand.New(rand.NewPCG(1, 2))
	seqs := map[string]int64{}
	batch := make([]domain.Message, 0, fillBatch)
	docs := make([]store.SearchDoc, 0, fillBatch)
	flush := func() {
		if _, err := msgs.SaveBatch(ctx, batch); err != nil {
			b.Fatalf("save %d messages: %v", len(batch), err)
		}
		if err := search.Index(ctx, docs); err != nil {
			b.Fatal(err)
		}
		batch, docs = batch[:0], docs[:0]
	}
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).UnixMilli()
	for i := 0; i < n; i++ {
		var from, to string
		if rng.IntN(100) < searcherShare {
			from, to = searcher, fmt.Sprint("peer", rng.IntN(searcherConvs))
			if rng.IntN(2) == 0 {
				from, to = to, from
			}
		} else {
			c := rng.IntN(otherConvs)
			from, to = fmt.Sprint("u", c), fmt.Sprint("v", c)
		}
		conv := domain.SingleConversationID(from, to)
		seqs[conv]++
		text := sampleText(rng)
		id := fmt.Sprint("m", i)
		batch = append(batch, domain.Message{ServerMsgID: id, ClientMsgID: id, ConversationID: conv, Seq: seqs[conv],
			SenderID: from, RecvID: to, SessionType: domain.SessionSingle, MsgType: domain.MsgText,
			Content: domain.Content{Text: text}, Status: domain.StatusNormal, SendAt: base + int64(i)})
		docs = append(docs, store.SearchDoc{ConversationID: conv, Seq: seqs[conv], SessionType: domain.SessionSingle,
			SenderID: from, RecvID: to, MsgType: domain.MsgText, SendAt: base + int64(i), Field: "text", Body: text})
		if len(batch) == fillBatch {
			flush()
		}
		if (i+1)%100000 == 0 {
			b.Logf("filled %d", i+1)
		}
	}
	if len(batch) > 0 {
		flush()
	}
}

// Word material: English-like words from syllables, Chinese from common
// characters; neither contains a measured keyword by accident (checked
// below by construction: no syllable list spells them).
var (
	syllables = []string{"ka", "lo", "mi", "ren", "ta", "su", "no", "ve", "di", "pra", "gul", "os", "en", "bi", "cor",
		"tu", "ma", "sel", "fo", "ni", "qua", "dre", "mon", "pi"}
	hanzi = []rune("我你他们的是在有这个不了人会说到就要去来上下大小好多少时候家国学生工作朋友吃饭电话明后晚早")
)

// sampleText is a message of 4-14 words (a fifth of them Chinese) that
// holds each measured keyword at its rate.
func sampleText(rng *rand.Rand) string {
	var sb strings.Builder
	chinese := rng.IntN(5) == 0
	words := 4 + rng.IntN(11)
	for w := 0; w < words; w++ {
		if chinese {
			for c := 0; c < 1+rng.IntN(3); c++ {
				sb.WriteRune(hanzi[rng.IntN(len(hanzi))])
			}
			continue
		}
		if w > 0 {
			sb.WriteByte(' ')
		}
		for s := 0; s < 1+rng.IntN(3); s++ {
			sb.WriteString(syllables[rng.IntN(len(syllables))])
		}
	}
	for _, k := range searchKeywords {
		if rng.IntN(k.every) == 0 {
			sb.WriteByte(' ')
			sb.WriteString(k.keyword)
		}
	}
	return sb.String()
}
