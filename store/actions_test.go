package store_test

import (
	"errors"
	"slices"
	"testing"

	"github.com/nexo-im/nexo/domain"
	"github.com/nexo-im/nexo/store"
	"github.com/nexo-im/nexo/store/storetest"
)

// TestActionRepoContract: edits keep their history and rising versions,
// reactions respect the cap and count per emoji, a delete for everyone
// leaves a tombstone, and what a user hid stays out of its search and its
// conversation list's last message — on MariaDB and SQLite.
func TestActionRepoContract(t *testing.T) {
	for _, b := range storetest.Backends() {
		t.Run(b.Name, func(t *testing.T) {
			t.Parallel()
			f := newSearchFixture(t, b)
			repo := store.NewActionRepo(f.db)
			conv := domain.SingleConversationID("amy", "bob")
			f.add(conv, 1, "amy", "bob", "first words")
			f.add(conv, 2, "bob", "amy", "second words")
			ctx := f.ctx
			allow := func(*domain.Message) error { return nil }

			for i, text := range []string{"first edit", "second edit"} {
				m, err := repo.Edit(ctx, conv, 1, "amy", text, int64(5000+i), allow)
				if err != nil || m.EditVersion != i+1 || m.Content.Text != text {
					t.Fatalf("edit %d: %+v %v", i, m, err)
				}
			}
			refuse := errors.New("no")
			if _, err := repo.Edit(ctx, conv, 1, "amy", "x", 1, func(*domain.Message) error { return refuse }); !errors.Is(err, refuse) {
				t.Fatalf("a refused edit: %v", err)
			}
			got, _ := f.msgs.BySeqs(ctx, conv, []int64{1})
			if got[0].Content.Text != "second edit" || got[0].EditVersion != 2 || got[0].EditedAt != 5001 {
				t.Fatalf("stored %+v", got[0])
			}
			hist, err := repo.Edits(ctx, conv, 1)
			if err != nil || len(hist) != 2 || hist[0].Text != "first words" || hist[1].Text != "first edit" || hist[1].Version != 1 {
				t.Fatalf("history %+v %v", hist, err)
			}
			if hits := f.find("bob", "second edit"); !slices.Equal(hits, []string{conv + "#1"}) {
				t.Fatalf("search does not follow the edit: %v", hits)
			}

			for _, e := range []string{"a", "b"} {
				if _, err := repo.React(ctx, conv, 1, "bob", e, true, 2, allow); err != nil {
					t.Fatal(err)
				}
			}
			if _, err := repo.React(ctx, conv, 1, "bob", "c", true, 2, allow); !errors.Is(err, domain.ErrTooManyReactions) {
				t.Fatalf("third reaction with a cap of 2: %v", err)
			}
			if out, err := repo.React(ctx, conv, 1, "amy", "a", true, 2, allow); err != nil || out.Count != 2 || !out.Changed {
				t.Fatalf("amy's reaction: %+v %v", out, err)
			}
			rs, err := repo.Reactions(ctx, conv, []int64{1, 2}, "amy")
			if err != nil || len(rs[1]) != 2 || rs[1][0] != (store.ReactionCount{Emoji: "a", Count: 2, Me: true}) || rs[1][1].Me {
				t.Fatalf("reactions %+v %v", rs, err)
			}

			// bob hides seq 2: his search and his latest leave it out, amy's keep it.
			if err := repo.Hide(ctx, "bob", conv, []int64{2, 2}); err != nil {
				t.Fatal(err)
			}
			if err := repo.Hide(ctx, "bob", conv, []int64{2}); err != nil {
				t.Fatal(err)
			}
			if hits := f.find("bob", "second words"); len(hits) != 0 {
				t.Fatalf("bob finds what he deleted: %v", hits)
			}
			if hits := f.find("amy", "second words"); len(hits) != 1 {
				t.Fatalf("amy lost %v", hits)
			}
			convs := store.NewConversationRepo(f.db)
			rg := []store.SeqRange{{ConversationID: conv, After: 0, Upto: 2}}
			if l, _ := convs.LatestFor(ctx, "bob", rg); l[conv].Seq != 1 {
				t.Fatalf("bob's latest %+v", l[conv])
			}
			if l, _ := convs.LatestFor(ctx, "amy", rg); l[conv].Seq != 2 {
				t.Fatalf("amy's latest %+v", l[conv])
			}
			// Offline resend reads through MessagesFor.
			if ms, _ := convs.MessagesFor(ctx, "bob", rg); len(ms) != 1 || ms[0].Seq != 1 {
				t.Fatalf("bob's resend %+v", ms)
			}
			if ms, _ := convs.MessagesFor(ctx, "amy", rg); len(ms) != 2 {
				t.Fatalf("amy's resend %+v", ms)
			}

			// Delete for everyone: a tombstone without content, reactions or history.
			if _, err := repo.DeleteForAll(ctx, conv, []int64{1}, allow); err != nil {
				t.Fatal(err)
			}
			got, _ = f.msgs.BySeqs(ctx, conv, []int64{1})
			if got[0].Status != domain.StatusDeleted || got[0].Content.Text != "" || got[0].SenderID != "amy" {
				t.Fatalf("tombstone %+v", got[0])
			}
			if rs, _ := repo.Reactions(ctx, conv, []int64{1}, "amy"); len(rs[1]) != 0 {
				t.Fatalf("a tombstone keeps reactions %+v", rs)
			}
			if hist, _ := repo.Edits(ctx, conv, 1); len(hist) != 0 {
				t.Fatalf("a tombstone keeps its history %+v", hist)
			}
			if hits := f.find("bob", "second edit"); len(hits) != 0 {
				t.Fatalf("search finds a deleted message: %v", hits)
			}
		})
	}
}
