package search_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/nexo-im/nexo/domain"
	"github.com/nexo-im/nexo/services/search"
	"github.com/nexo-im/nexo/store"
	"github.com/nexo-im/nexo/store/storetest"
)

// cancelAfter is a progress that cancels the run after n batches.
type cancelAfter struct {
	n, batches int
	total      int64
	cancel     context.CancelFunc
}

func (p *cancelAfter) Start(total int64) { p.total = total }
func (p *cancelAfter) Add(int) {
	if p.batches++; p.batches == p.n {
		p.cancel()
	}
}

// searchRows lists the search table as "conv#seq field body".
func searchRows(t *testing.T, db *store.DB) []string {
	t.Helper()
	var rows []struct {
		ConversationID string
		Seq            int64
		Field, Body    string
	}
	if err := db.Gorm.Raw("SELECT conversation_id, seq, field, body FROM message_search").Scan(&rows).Error; err != nil {
		t.Fatal(err)
	}
	out := make([]string, 0, len(rows))
	for _, r := range rows {
		out = append(out, fmt.Sprintf("%s#%d %s %s", r.ConversationID, r.Seq, r.Field, r.Body))
	}
	slices.Sort(out)
	return out
}

// TestReindex: on a table indexed in part, a reindex fills the rest with
// exactly what the indexing stage would have written; a run cancelled
// mid-way resumes where it stopped; a run again changes nothing; --since
// bounds it.
func TestReindex(t *testing.T) {
	for _, b := range storetest.Backends() {
		t.Run(b.Name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			db := b.Open(t)
			repo, err := store.NewSearchRepo(ctx, db)
			if err != nil {
				t.Fatal(err)
			}
			msgs := store.NewMessageRepo(db)
			conv := "si_alice_bob"
			var saved []domain.Message
			var want []string
			for seq := int64(1); seq <= 23; seq++ {
				m := domain.Message{ServerMsgID: fmt.Sprintf("s%d", seq), ClientMsgID: fmt.Sprintf("c%d", seq),
					ConversationID: conv, Seq: seq, SessionType: domain.SessionSingle, SenderID: "alice", RecvID: "bob",
					MsgType: domain.MsgText, Content: domain.Content{Text: fmt.Sprintf("hello %d", seq)},
					Status: domain.StatusNormal, SendAt: 1000 + seq}
				field := "text"
				switch seq % 5 {
				case 1: // not searchable
					m.MsgType, m.Content = domain.MsgPicture, domain.Content{Image: "https://x/p.png"}
				case 2:
					m.MsgType, m.Content = domain.MsgCustom, domain.Content{Custom: fmt.Sprintf(`{"search_text":"hello %d","k":1}`, seq)}
					field = "search_text"
				case 3: // a custom message without search_text is not searchable
					m.MsgType, m.Content = domain.MsgCustom, domain.Content{Custom: `{"k":1}`}
				case 4:
					m.MsgType, m.Content = domain.MsgFile, domain.Content{File: fmt.Sprintf("hello %d", seq)}
					field = "file"
				}
				saved = append(saved, m)
				if seq%5 != 1 && seq%5 != 3 {
					want = append(want, fmt.Sprintf("%s#%d %s hello %d", conv, seq, field, seq))
				}
			}
			if _, err := msgs.SaveBatch(ctx, saved); err != nil {
				t.Fatal(err)
			}
			// A failed placeholder is never searchable.
			failed := domain.Message{ServerMsgID: "s24", ClientMsgID: "c24", ConversationID: conv, Seq: 24,
				SessionType: domain.SessionSingle, SenderID: "alice", RecvID: "bob", MsgType: domain.MsgText,
				Content: domain.Content{Text: "hello 24"}, Status: domain.StatusFailed, SendAt: 1024}
			if err := msgs.SaveFailed(ctx, failed); err != nil {
				t.Fatal(err)
			}
			slices.Sort(want)

			// The indexing stage wrote the first few.
			var first []store.SearchDoc
			for i := range saved[:6] {
				if d, ok := search.DocOf(&saved[i]); ok {
					first = append(first, d)
				}
			}
			if err := repo.Index(ctx, first); err != nil {
				t.Fatal(err)
			}

			// Cancelled after 2 batches of 4: its progress is kept.
			rx := search.NewReindexer(repo, 4)
			cctx, cancel := context.WithCancel(ctx)
			p := &cancelAfter{n: 2, cancel: cancel}
			res, err := rx.Run(cctx, 0, p)
			cancel()
			if !errors.Is(err, context.Canceled) || res.Read != 8 || p.total != 23 {
				t.Fatalf("cancelled run: %+v, total %d, err %v", res, p.total, err)
			}
			afterID, since, err := repo.ReindexState(ctx, search.ReindexRun)
			if err != nil || afterID == 0 || since != 0 {
				t.Fatalf("progress after cancel: id %d since %d err %v", afterID, since, err)
			}
			// Seqs 1-8 are read: 2, 4, 5 and 7 are searchable.
			if got := len(searchRows(t, db)); got != 4 {
				t.Fatalf("after the cancelled run %d rows indexed, want 4: %q", got, searchRows(t, db))
			}

			// Started again, it resumes after the id it reached.
			p = &cancelAfter{n: -1}
			res, err = rx.Run(ctx, 0, p)
			if err != nil || res.ResumedAfter != afterID || res.Read != 15 || p.total != 15 {
				t.Fatalf("resumed run: %+v, total %d, err %v (progress was %d)", res, p.total, err, afterID)
			}
			if got := searchRows(t, db); !slices.Equal(got, want) {
				t.Fatalf("indexed:\n%q\nwant:\n%q", got, want)
			}
			if afterID, _, _ := repo.ReindexState(ctx, search.ReindexRun); afterID != 0 {
				t.Fatalf("finished run left progress at id %d", afterID)
			}

			// Again: everything is read, nothing changes.
			res, err = rx.Run(ctx, 0, nil)
			if err != nil || res.ResumedAfter != 0 || res.Read != 23 {
				t.Fatalf("second run: %+v, err %v", res, err)
			}
			if got := searchRows(t, db); !slices.Equal(got, want) {
				t.Fatalf("a second run changed the table:\n%q", got)
			}

			// since bounds the run by send_at.
			res, err = rx.Run(ctx, 1020, nil)
			if err != nil || res.Read != 4 {
				t.Fatalf("run since 1020: %+v, err %v", res, err)
			}
		})
	}
}
