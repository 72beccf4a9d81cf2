package store_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/nexo-im/nexo/domain"
	"github.com/nexo-im/nexo/store"
	"github.com/nexo-im/nexo/store/storetest"
)

// TestReportRepo: a report keeps the message's content as given; a second
// report of the same message by the same reporter stores nothing and
// answers the first; another reporter's is its own; List pages in filing
// order and filters by status; Resolve is idempotent (the first resolution
// stands) and an unknown id is report_not_found.
func TestReportRepo(t *testing.T) {
	for _, b := range storetest.Backends() {
		t.Run(b.Name, func(t *testing.T) {
			t.Parallel()
			repo := store.NewReportRepo(b.Open(t))
			ctx := context.Background()
			custom := `{"search_text":"` + strings.Repeat("x", 70000) + `"}` // past TEXT's 64 KiB
			msg := domain.Message{ServerMsgID: "m1", SenderID: "mallory", RecvID: "alice", SessionType: domain.SessionSingle,
				MsgType: domain.MsgCustom, Status: domain.StatusNormal, SendAt: 1000, Content: domain.Content{Custom: custom}}
			file := func(reporter, reason string) (domain.Report, bool) {
				t.Helper()
				id, _ := uuid.NewV7()
				rep, dup, err := repo.Create(ctx, domain.Report{ID: id.String(), ReporterID: reporter, ConversationID: "si_alice_mallory",
					Seq: 7, Reason: reason, CreatedAt: 2000, Message: msg})
				if err != nil {
					t.Fatal(err)
				}
				return rep, dup
			}
			first, dup := file("alice", "spam")
			if dup || first.Status != domain.ReportOpen || first.Message.Content.Custom != custom || first.Message.SenderID != "mallory" {
				t.Fatalf("first: dup %v %+v", dup, first.Message.SenderID)
			}
			again, dup := file("alice", "changed my mind")
			if !dup || again.ID != first.ID || again.Reason != "spam" {
				t.Fatalf("again: dup %v id %s reason %q", dup, again.ID, again.Reason)
			}
			other, dup := file("mallory", "self")
			if dup || other.ID == first.ID {
				t.Fatalf("another reporter: dup %v", dup)
			}
			page, err := repo.List(ctx, "", "", 1)
			if err != nil || len(page) != 1 || page[0].ID != first.ID {
				t.Fatalf("page 1: %v %v", page, err)
			}
			page, err = repo.List(ctx, "", page[0].ID, 10)
			if err != nil || len(page) != 1 || page[0].ID != other.ID {
				t.Fatalf("page 2: %v %v", page, err)
			}
			res, err := repo.Resolve(ctx, first.ID, "mod1", "warned", 3000)
			if err != nil || res.Status != domain.ReportResolved || res.ResolvedAt != 3000 || res.ResolvedBy != "mod1" || res.Resolution != "warned" {
				t.Fatalf("resolve: %+v %v", res, err)
			}
			res, err = repo.Resolve(ctx, first.ID, "mod2", "banned", 4000)
			if err != nil || res.ResolvedBy != "mod1" || res.ResolvedAt != 3000 {
				t.Fatalf("second resolve changed it: %+v %v", res, err)
			}
			open, err := repo.List(ctx, domain.ReportOpen, "", 10)
			if err != nil || len(open) != 1 || open[0].ID != other.ID {
				t.Fatalf("open: %v %v", open, err)
			}
			if _, err := repo.Resolve(ctx, "nope", "", "", 1); !errors.Is(err, domain.ErrReportNotFound) {
				t.Fatalf("unknown id: %v", err)
			}
		})
	}
}
