package store_test

import (
	"context"
	"testing"

	"github.com/nexo-im/nexo/domain"
	"github.com/nexo-im/nexo/store"
	"github.com/nexo-im/nexo/store/storetest"
)

// TestCursorAdvanceContract: cursors only move forward, whatever order and
// how often the same advances arrive; missing rows are created; Load
// returns exactly the stored rows.
func TestCursorAdvanceContract(t *testing.T) {
	for _, b := range storetest.Backends() {
		t.Run(b.Name, func(t *testing.T) {
			t.Parallel()
			repo := store.NewCursorRepo(b.Open(t))
			ctx := context.Background()
			at := func(user, conv string, delivered, read int64) domain.Cursor {
				return domain.Cursor{UserID: user, ConversationID: conv, DeliveredSeq: delivered, ReadSeq: read}
			}
			steps := []struct {
				name    string
				advance []domain.Cursor
				want    map[store.CursorKey][2]int64 // delivered, read
			}{
				{"creates rows", []domain.Cursor{at("u1", "c1", 5, 3), at("u2", "c1", 2, 0)},
					map[store.CursorKey][2]int64{{"u1", "c1"}: {5, 3}, {"u2", "c1"}: {2, 0}}},
				{"lower values change nothing", []domain.Cursor{at("u1", "c1", 4, 1), at("u2", "c1", 0, 0)},
					map[store.CursorKey][2]int64{{"u1", "c1"}: {5, 3}, {"u2", "c1"}: {2, 0}}},
				{"each column moves on its own", []domain.Cursor{at("u1", "c1", 1, 9), at("u2", "c1", 7, 0)},
					map[store.CursorKey][2]int64{{"u1", "c1"}: {5, 9}, {"u2", "c1"}: {7, 0}}},
				{"repeats are no-ops", []domain.Cursor{at("u1", "c1", 5, 9), at("u1", "c1", 5, 9)},
					map[store.CursorKey][2]int64{{"u1", "c1"}: {5, 9}, {"u2", "c1"}: {7, 0}}},
			}
			for _, st := range steps {
				if _, err := repo.Advance(ctx, st.advance); err != nil {
					t.Fatalf("%s: %v", st.name, err)
				}
				keys := []store.CursorKey{{"u1", "c1"}, {"u2", "c1"}, {"u3", "c1"}}
				got, err := repo.Load(ctx, keys)
				if err != nil {
					t.Fatal(err)
				}
				if _, ok := got[store.CursorKey{"u3", "c1"}]; ok {
					t.Fatalf("%s: a key without a row was returned", st.name)
				}
				for k, w := range st.want {
					c := got[k]
					if c.DeliveredSeq != w[0] || c.ReadSeq != w[1] {
						t.Errorf("%s: %v = delivered %d read %d, want %v", st.name, k, c.DeliveredSeq, c.ReadSeq, w)
					}
				}
			}
		})
	}
}

// TestCursorAdvanceKeepsVisibilityBounds: advancing never touches min_seq
// and max_seq, which the group repository owns.
func TestCursorAdvanceKeepsVisibilityBounds(t *testing.T) {
	for _, b := range storetest.Backends() {
		t.Run(b.Name, func(t *testing.T) {
			t.Parallel()
			db := b.Open(t)
			ctx := context.Background()
			if err := db.Gorm.Exec("INSERT INTO seq_users (user_id, conversation_id, min_seq, max_seq, read_seq, delivered_seq) VALUES ('u', 'sg_g', 10, 40, 9, 9)").Error; err != nil {
				t.Fatal(err)
			}
			repo := store.NewCursorRepo(db)
			n, err := repo.Advance(ctx, []domain.Cursor{{UserID: "u", ConversationID: "sg_g", ReadSeq: 20, DeliveredSeq: 30, MinSeq: 1, MaxSeq: 99}})
			if err != nil || n != 1 {
				t.Fatalf("advance: %d statements, %v", n, err)
			}
			c, err := repo.Get(ctx, "u", "sg_g")
			if err != nil || c.MinSeq != 10 || c.MaxSeq != 40 || c.ReadSeq != 20 || c.DeliveredSeq != 30 {
				t.Fatalf("cursor %+v, %v", c, err)
			}
		})
	}
}

// TestCursorAdvanceChunks: a flush of more than 500 cursors is split into
// statements of at most 500 rows.
func TestCursorAdvanceChunks(t *testing.T) {
	db := storetest.MySQL(t)
	repo := store.NewCursorRepo(db)
	var cs []domain.Cursor
	var keys []store.CursorKey
	for i := 0; i < 1001; i++ {
		u := "user" + string(rune('a'+i%26)) + string(rune('a'+i/26%26)) + string(rune('a'+i/676))
		cs = append(cs, domain.Cursor{UserID: u, ConversationID: "c", ReadSeq: 1, DeliveredSeq: 2})
		keys = append(keys, store.CursorKey{UserID: u, ConversationID: "c"})
	}
	n, err := repo.Advance(context.Background(), cs)
	if err != nil || n != 3 {
		t.Fatalf("advance 1001: %d statements, %v", n, err)
	}
	got, err := repo.Load(context.Background(), keys)
	if err != nil || len(got) != 1001 {
		t.Fatalf("loaded %d, %v", len(got), err)
	}
}
