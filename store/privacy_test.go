package store_test

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"testing"

	"github.com/nexo-im/nexo/domain"
	"github.com/nexo-im/nexo/store"
	"github.com/nexo-im/nexo/store/storetest"
)

// tablesHolding lists the tables of db with a row in which some column
// contains needle: every table the schema has, whatever added it.
func tablesHolding(t *testing.T, db *store.DB, needle string) []string {
	t.Helper()
	tables, err := db.Gorm.Migrator().GetTables()
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, table := range tables {
		rows, err := db.Gorm.Raw(fmt.Sprintf("SELECT * FROM %q", table)).Rows()
		if db.Dialect == store.MySQL {
			rows, err = db.Gorm.Raw("SELECT * FROM `" + table + "`").Rows()
		}
		if err != nil {
			t.Fatalf("read %s: %v", table, err)
		}
		cols, _ := rows.Columns()
		vals := make([]sql.RawBytes, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		found := false
		for rows.Next() && !found {
			if err := rows.Scan(ptrs...); err != nil {
				t.Fatalf("scan %s: %v", table, err)
			}
			for _, v := range vals {
				if bytes.Contains(v, []byte(needle)) {
					found = true
				}
			}
		}
		_ = rows.Close()
		if found {
			out = append(out, table)
		}
	}
	return out
}

// TestEraseUser: erasing an account leaves no table holding its profile,
// reserves its user_id (in any letter case) against re-registration, keeps
// its messages unless asked to erase them, and takes its blocks, cursors
// and conversation rows; erasing again is fine.
func TestEraseUser(t *testing.T) {
	for _, b := range storetest.Backends() {
		t.Run(b.Name, func(t *testing.T) {
			t.Parallel()
			db := b.Open(t)
			ctx := context.Background()
			users, msgs, priv, blocks := store.NewUserRepo(db), store.NewMessageRepo(db), store.NewPrivacyRepo(db), store.NewBlockRepo(db)
			nick := storetest.RandomName("NickOfKeeper")
			avatar := "https://example.com/" + storetest.RandomName("av")
			for _, id := range []string{"keeper", "eraser", "bob"} {
				u := domain.User{ID: id, Nickname: id, PasswordHash: "hash-of-" + id}
				if id == "keeper" {
					u.Nickname, u.Avatar = nick, avatar
				}
				if _, err := users.Create(ctx, u); err != nil {
					t.Fatal(err)
				}
			}
			batch := []domain.Message{textMsg("keeper", "bob", "k1", 1), textMsg("bob", "keeper", "b1", 2),
				textMsg("eraser", "bob", "e1", 1), textMsg("bob", "eraser", "b2", 2)}
			if _, err := msgs.SaveBatch(ctx, batch); err != nil {
				t.Fatal(err)
			}
			if err := blocks.Block(ctx, "keeper", "bob"); err != nil {
				t.Fatal(err)
			}
			if err := blocks.Block(ctx, "bob", "keeper"); err != nil {
				t.Fatal(err)
			}
			if got := tablesHolding(t, db, nick); len(got) == 0 {
				t.Fatal("the scan finds no nickname before the erase: it cannot tell anything")
			}

			if err := priv.EraseUser(ctx, "keeper", store.EraseOptions{}); err != nil {
				t.Fatal(err)
			}
			for _, needle := range []string{nick, avatar, "hash-of-keeper"} {
				if got := tablesHolding(t, db, needle); len(got) > 0 {
					t.Errorf("%q still in %v", needle, got)
				}
			}
			if _, err := users.Get(ctx, "keeper"); !errors.Is(err, domain.ErrUserNotFound) {
				t.Fatalf("the erased user: %v", err)
			}
			for _, id := range []string{"keeper", "KEEPER"} {
				if _, err := users.Create(ctx, domain.User{ID: id, Nickname: "again"}); !errors.Is(err, domain.ErrUserExists) {
					t.Fatalf("re-register %s: %v", id, err)
				}
			}
			if ok, err := priv.Reserved(ctx, "Keeper"); err != nil || !ok {
				t.Fatalf("reserved: %v %v", ok, err)
			}
			conv := domain.SingleConversationID("keeper", "bob")
			kept, err := msgs.BySeqs(ctx, conv, []int64{1, 2})
			if err != nil || len(kept) != 2 || kept[0].SenderID != "keeper" {
				t.Fatalf("messages of an erased user are kept by default: %v %v", kept, err)
			}
			if by, _ := blocks.BlockersOf(ctx, "bob", []string{"keeper"}); by["keeper"] {
				t.Fatal("the erased user's blocks stay")
			}
			if list, _ := blocks.Blocks(ctx, "bob"); len(list) != 0 {
				t.Fatalf("blocks of the erased user stay: %v", list)
			}
			if convs, _ := priv.ExportConversations(ctx, "keeper"); len(convs) != 0 {
				t.Fatalf("conversation rows and cursors stay: %v", convs)
			}
			if err := priv.EraseUser(ctx, "keeper", store.EraseOptions{}); err != nil {
				t.Fatalf("erasing again: %v", err)
			}
			if err := priv.EraseUser(ctx, "nobody", store.EraseOptions{}); !errors.Is(err, domain.ErrUserNotFound) {
				t.Fatalf("erasing an unknown user: %v", err)
			}

			if err := priv.EraseUser(ctx, "eraser", store.EraseOptions{Messages: true}); err != nil {
				t.Fatal(err)
			}
			conv = domain.SingleConversationID("eraser", "bob")
			left, err := msgs.BySeqs(ctx, conv, []int64{1, 2})
			if err != nil || len(left) != 1 || left[0].SenderID != "bob" {
				t.Fatalf("erase_deleted_users deletes what the user sent, only: %v %v", left, err)
			}
		})
	}
}

// TestDeleteExpiredAndClear: the expiry deletes only messages sent before
// the cut, in batches, per conversation or everywhere; retention rows
// round-trip; a clear only rises and hides the conversation.
func TestDeleteExpiredAndClear(t *testing.T) {
	for _, b := range storetest.Backends() {
		t.Run(b.Name, func(t *testing.T) {
			t.Parallel()
			db := b.Open(t)
			ctx := context.Background()
			msgs, priv := store.NewMessageRepo(db), store.NewPrivacyRepo(db)
			var batch []domain.Message
			for seq := int64(1); seq <= 30; seq++ {
				batch = append(batch, textMsg("ann", "ben", fmt.Sprint("a", seq), seq), textMsg("cat", "dan", fmt.Sprint("c", seq), seq))
			}
			if _, err := msgs.SaveBatch(ctx, batch); err != nil {
				t.Fatal(err)
			}
			ab, cd := domain.SingleConversationID("ann", "ben"), domain.SingleConversationID("cat", "dan")
			mentions := func(conv string) int64 {
				var n int64
				if err := db.Gorm.Raw("SELECT COUNT(*) FROM message_mentions WHERE conversation_id = ?", conv).Scan(&n).Error; err != nil {
					t.Fatal(err)
				}
				return n
			}
			if mentions(ab) != 30 {
				t.Fatalf("mentions before: %d", mentions(ab))
			}
			// send_at is 1700000000000 + seq: before +11 is seqs 1..10.
			n, err := priv.DeleteExpired(ctx, ab, nil, 1700000000000+11, 4)
			if err != nil || n != 4 {
				t.Fatalf("one batch of 4: %d %v", n, err)
			}
			n, err = priv.DeleteExpired(ctx, ab, nil, 1700000000000+11, 100)
			if err != nil || n != 6 {
				t.Fatalf("the rest: %d %v", n, err)
			}
			if left, _ := msgs.Range(ctx, ab, 1, 30, 100); len(left) != 20 || left[0].Seq != 11 {
				t.Fatalf("left in %s: %d from %d", ab, len(left), left[0].Seq)
			}
			if n := mentions(ab); n != 20 {
				t.Fatalf("mentions of the expired messages stay: %d left, want 20", n)
			}
			if left, _ := msgs.Range(ctx, cd, 1, 30, 100); len(left) != 30 {
				t.Fatalf("another conversation lost %d", 30-len(left))
			}
			n, err = priv.DeleteExpired(ctx, "", nil, 1700000000000+21, 1000)
			if err != nil || n != 30 {
				t.Fatalf("everywhere: %d %v", n, err)
			}
			if left, _ := msgs.Range(ctx, cd, 1, 30, 100); len(left) != 10 || left[0].Seq != 21 {
				t.Fatalf("left in %s: %d", cd, len(left))
			}

			if err := priv.SetRetention(ctx, ab, 60_000, "ann"); err != nil {
				t.Fatal(err)
			}
			if err := priv.SetRetention(ctx, ab, 120_000, "ben"); err != nil {
				t.Fatal(err)
			}
			if ms, err := priv.Retention(ctx, ab); err != nil || ms != 120_000 {
				t.Fatalf("retention: %d %v", ms, err)
			}
			if all, err := priv.Retentions(ctx); err != nil || len(all) != 1 || all[ab] != 120_000 {
				t.Fatalf("retentions: %v %v", all, err)
			}
			if err := priv.SetRetention(ctx, ab, 0, "ann"); err != nil {
				t.Fatal(err)
			}
			if ms, _ := priv.Retention(ctx, ab); ms != 0 {
				t.Fatalf("removed retention: %d", ms)
			}

			for _, seq := range []int64{25, 20} {
				if err := priv.Clear(ctx, "ann", ab, seq); err != nil {
					t.Fatal(err)
				}
			}
			if got, err := priv.ClearedSeq(ctx, "ann", ab); err != nil || got != 25 {
				t.Fatalf("cleared seq only rises: %d %v", got, err)
			}
			if got, _ := priv.ClearedSeq(ctx, "ben", ab); got != 0 {
				t.Fatalf("the other party's: %d", got)
			}
			if err := priv.Clear(ctx, "zed", domain.SingleConversationID("zed", "yan"), 3); err != nil {
				t.Fatalf("clear without a conversation row: %v", err)
			}
			if got, _ := priv.ClearedSeq(ctx, "zed", domain.SingleConversationID("zed", "yan")); got != 3 {
				t.Fatalf("cleared without a row: %d", got)
			}
		})
	}
}

// TestExpiryAndErasureReachTheSearchIndex: an expired message and an
// erased user's message leave message_search with the message, so search
// never finds text that is gone.
func TestExpiryAndErasureReachTheSearchIndex(t *testing.T) {
	for _, b := range storetest.Backends() {
		t.Run(b.Name, func(t *testing.T) {
			t.Parallel()
			f := newSearchFixture(t, b)
			priv := store.NewPrivacyRepo(f.db)
			conv := domain.SingleConversationID("sue", "tom")
			for seq := int64(1); seq <= 4; seq++ {
				from, to := "sue", "tom"
				if seq == 4 {
					from, to = "tom", "sue"
				}
				f.add(conv, seq, from, to, fmt.Sprintf("pineapple number %d", seq))
			}
			if _, err := store.NewUserRepo(f.db).Create(f.ctx, domain.User{ID: "tom", Nickname: "t"}); err != nil {
				t.Fatal(err)
			}
			if n, _ := f.search.Indexed(f.ctx); n != 4 {
				t.Fatalf("indexed %d", n)
			}
			// The fixture's send_at is 1000 + its count: seqs 1 and 2 are
			// before 1003.
			if n, err := priv.DeleteExpired(f.ctx, "", nil, 1003, 100); err != nil || n != 2 {
				t.Fatalf("expired: %d %v", n, err)
			}
			if n, _ := f.search.Indexed(f.ctx); n != 2 {
				t.Fatalf("after the expiry the index holds %d rows, want 2", n)
			}
			if hits := f.find("tom", "pineapple"); len(hits) != 2 {
				t.Fatalf("search after the expiry: %v", hits)
			}
			if err := priv.EraseUser(f.ctx, "tom", store.EraseOptions{Messages: true}); err != nil {
				t.Fatal(err)
			}
			if hits := f.find("sue", "pineapple"); len(hits) != 1 || hits[0] != conv+"#3" {
				t.Fatalf("search after erasing tom: %v", hits)
			}
		})
	}
}
