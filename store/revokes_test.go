package store_test

import (
	"context"
	"errors"
	"testing"

	"github.com/nexo-im/nexo/domain"
	"github.com/nexo-im/nexo/store"
	"github.com/nexo-im/nexo/store/storetest"
)

// TestRevokeSavedContract: a saved message is revoked once; Message finds
// any status; an unknown seq is domain.ErrMessageNotFound.
func TestRevokeSavedContract(t *testing.T) {
	for _, b := range storetest.Backends() {
		t.Run(b.Name, func(t *testing.T) {
			t.Parallel()
			f := newSyncFixture(t, b)
			ctx := context.Background()
			repo := store.NewRevokeRepo(f.db)
			for i, want := range []bool{true, false} {
				changed, err := repo.Revoke(ctx, f.ab, 2)
				if err != nil || changed != want {
					t.Fatalf("revoke #%d: changed %v, %v", i+1, changed, err)
				}
			}
			m, err := repo.Message(ctx, f.ab, 2)
			if err != nil || m.Status != domain.StatusRevoked || m.SenderID != "bob" {
				t.Fatalf("revoked message = %+v, %v", m, err)
			}
			if changed, _ := repo.Revoke(ctx, f.g, 4); changed {
				t.Fatal("a failed placeholder was revoked")
			}
			if _, err := repo.Message(ctx, f.ab, 99); !errors.Is(err, domain.ErrMessageNotFound) {
				t.Fatalf("unknown seq: %v", err)
			}
		})
	}
}

// TestRevokeIntentAppliedBySaveBatch: a recall recorded before the message
// is saved applies in the save's transaction when the intent allows it
// (the sender within the window, or an admin for any ordinary message),
// and not otherwise; RevokeIntent.Applies, the rule in Go, agrees with the
// rule SaveBatch applies in SQL.
func TestRevokeIntentAppliedBySaveBatch(t *testing.T) {
	conv := domain.GroupConversationID("g")
	cases := []struct {
		name    string
		intents []store.RevokeIntent
		msg     domain.Message
		revoked bool
	}{
		{"sender within the window", []store.RevokeIntent{{conv, 1, "bob", false, t0 - 1}},
			msgAt(conv, 1, "bob", t0, domain.MsgText), true},
		{"sender, sent before the window", []store.RevokeIntent{{conv, 1, "bob", false, t0 + 1}},
			msgAt(conv, 1, "bob", t0, domain.MsgText), false},
		{"not the sender", []store.RevokeIntent{{conv, 1, "carol", false, 0}},
			msgAt(conv, 1, "bob", t0, domain.MsgText), false},
		{"an admin, any sender", []store.RevokeIntent{{conv, 1, "carol", true, 0}},
			msgAt(conv, 1, "bob", t0, domain.MsgText), true},
		{"one of two intents applies", []store.RevokeIntent{{conv, 1, "carol", false, 0}, {conv, 1, "bob", false, 0}},
			msgAt(conv, 1, "bob", t0, domain.MsgText), true},
		{"another seq", []store.RevokeIntent{{conv, 2, "bob", true, 0}},
			msgAt(conv, 1, "bob", t0, domain.MsgText), false},
		{"never a notification", []store.RevokeIntent{{conv, 1, "bob", true, 0}},
			msgAt(conv, 1, "bob", t0, domain.MsgNotificationMin+1), false},
	}
	for _, b := range storetest.Backends() {
		t.Run(b.Name, func(t *testing.T) {
			t.Parallel()
			for _, tc := range cases {
				applies := false
				for _, in := range tc.intents {
					applies = applies || in.Applies(&tc.msg)
				}
				if applies != tc.revoked {
					t.Errorf("%s: RevokeIntent.Applies says %v, the SQL rule must say %v", tc.name, applies, tc.revoked)
				}
				db := b.Open(t)
				ctx := context.Background()
				repo := store.NewRevokeRepo(db)
				for _, in := range tc.intents {
					if err := repo.Record(ctx, in); err != nil {
						t.Fatal(err)
					}
				}
				res, err := store.NewMessageRepo(db).SaveBatch(ctx, []domain.Message{tc.msg})
				if err != nil {
					t.Fatal(err)
				}
				m, err := repo.Message(ctx, conv, 1)
				if err != nil {
					t.Fatal(err)
				}
				if got := m.Status == domain.StatusRevoked; got != tc.revoked || (res[0].Original.Status == domain.StatusRevoked) != tc.revoked {
					t.Errorf("%s: stored %s, reported %s; want revoked %v", tc.name, m.Status, res[0].Original.Status, tc.revoked)
				}
				// A redelivery of the same entry keeps it as it is.
				if _, err := store.NewMessageRepo(db).SaveBatch(ctx, []domain.Message{tc.msg}); err != nil {
					t.Fatal(err)
				}
				if again, _ := repo.Message(ctx, conv, 1); again.Status != m.Status {
					t.Errorf("%s: redelivery changed %s to %s", tc.name, m.Status, again.Status)
				}
			}
		})
	}
}

// TestRevokeIntentsInABatch: in a batch of new messages only the one with
// an intent comes back revoked, and so it does in a batch that also
// redelivers a saved message (the statement-by-statement path).
func TestRevokeIntentsInABatch(t *testing.T) {
	conv := domain.GroupConversationID("g")
	for _, b := range storetest.Backends() {
		t.Run(b.Name, func(t *testing.T) {
			t.Parallel()
			db := b.Open(t)
			ctx := context.Background()
			repo, msgs := store.NewRevokeRepo(db), store.NewMessageRepo(db)
			for _, seq := range []int64{2, 5} {
				if err := repo.Record(ctx, store.RevokeIntent{ConversationID: conv, Seq: seq, RevokerID: "carol", AnySender: true}); err != nil {
					t.Fatal(err)
				}
			}
			check := func(batch []domain.Message, want map[int64]bool) {
				t.Helper()
				res, err := msgs.SaveBatch(ctx, batch)
				if err != nil {
					t.Fatal(err)
				}
				for i, m := range batch {
					stored, err := repo.Message(ctx, conv, m.Seq)
					if err != nil {
						t.Fatal(err)
					}
					got, reported := stored.Status == domain.StatusRevoked, res[i].Original.Status == domain.StatusRevoked
					if got != want[m.Seq] || reported != want[m.Seq] {
						t.Errorf("seq %d: stored %s, reported %s; want revoked %v", m.Seq, stored.Status, res[i].Original.Status, want[m.Seq])
					}
				}
			}
			fresh := []domain.Message{msgAt(conv, 1, "bob", t0, domain.MsgText), msgAt(conv, 2, "bob", t0, domain.MsgText),
				msgAt(conv, 3, "bob", t0, domain.MsgText)}
			check(fresh, map[int64]bool{2: true})
			check([]domain.Message{fresh[1], msgAt(conv, 4, "bob", t0, domain.MsgText), msgAt(conv, 5, "bob", t0, domain.MsgText)},
				map[int64]bool{2: true, 5: true})
		})
	}
}

// TestSaveBatchKeepsLatestSendAtAndMentions: the newest send_at only rises
// and skips failed placeholders; mention rows are written once per user.
func TestSaveBatchKeepsLatestSendAtAndMentions(t *testing.T) {
	for _, b := range storetest.Backends() {
		t.Run(b.Name, func(t *testing.T) {
			t.Parallel()
			db := b.Open(t)
			ctx := context.Background()
			msgs := store.NewMessageRepo(db)
			conv := domain.GroupConversationID("g")
			if _, err := msgs.SaveBatch(ctx, []domain.Message{msgAt(conv, 2, "a", t0+20, domain.MsgText, "b", "b", "all")}); err != nil {
				t.Fatal(err)
			}
			if _, err := msgs.SaveBatch(ctx, []domain.Message{msgAt(conv, 1, "a", t0+10, domain.MsgText, "c")}); err != nil {
				t.Fatal(err)
			}
			if err := msgs.SaveFailed(ctx, msgAt(conv, 3, "a", t0+30, domain.MsgText)); err != nil {
				t.Fatal(err)
			}
			var latest int64
			if err := db.Gorm.Raw("SELECT latest_send_at FROM seq_conversations WHERE conversation_id = ?", conv).Scan(&latest).Error; err != nil || latest != t0+20 {
				t.Fatalf("latest_send_at = %d, %v", latest, err)
			}
			var n int64
			if err := db.Gorm.Raw("SELECT COUNT(*) FROM message_mentions WHERE conversation_id = ?", conv).Scan(&n).Error; err != nil || n != 3 {
				t.Fatalf("%d mention rows, %v", n, err)
			}
		})
	}
}

// TestMigrationThreeRunsAgain: the sync migration is idempotent — run again
// after its record is lost, it changes nothing and fails on nothing.
func TestMigrationThreeRunsAgain(t *testing.T) {
	for _, b := range storetest.Backends() {
		t.Run(b.Name, func(t *testing.T) {
			t.Parallel()
			db := b.Open(t)
			if err := db.Gorm.Exec("DELETE FROM schema_migrations WHERE version = 3").Error; err != nil {
				t.Fatal(err)
			}
			applied, err := db.Migrate(context.Background())
			if err != nil || len(applied) != 1 || applied[0] != 3 {
				t.Fatalf("re-applied %v, %v", applied, err)
			}
			m := db.Gorm.Migrator()
			for _, c := range [][2]string{{"conversations", "hidden_seq"}, {"seq_conversations", "latest_send_at"}} {
				if !m.HasColumn(c[0], c[1]) {
					t.Errorf("column %s.%s missing", c[0], c[1])
				}
			}
			for _, tbl := range []string{"message_mentions", "message_revokes"} {
				if !m.HasTable(tbl) {
					t.Errorf("table %s missing", tbl)
				}
			}
		})
	}
}
