package store_test

import (
	"context"
	"errors"
	"testing"

	"github.com/nexo-im/nexo/domain"
	"github.com/nexo-im/nexo/store"
	"github.com/nexo-im/nexo/store/storetest"
)

// TestBlockRepo: blocking is idempotent, listed in block order, answered
// by BlockersOf for the blocked user only, and lifted by Unblock; the
// dm_policy column defaults to everyone and follows updates.
func TestBlockRepo(t *testing.T) {
	for _, b := range storetest.Backends() {
		t.Run(b.Name, func(t *testing.T) {
			t.Parallel()
			db := b.Open(t)
			blocks, users := store.NewBlockRepo(db), store.NewUserRepo(db)
			ctx := context.Background()
			for _, pair := range [][2]string{{"alice", "mallory"}, {"alice", "mallory"}, {"alice", "eve"}, {"bob", "mallory"}} {
				if err := blocks.Block(ctx, pair[0], pair[1]); err != nil {
					t.Fatal(err)
				}
			}
			list, err := blocks.Blocks(ctx, "alice")
			if err != nil || len(list) != 2 || list[0].UserID == list[1].UserID || list[0].CreatedAt == 0 || list[1].CreatedAt < list[0].CreatedAt {
				t.Fatalf("blocks of alice: %v %v", list, err)
			}
			by, err := blocks.BlockersOf(ctx, "mallory", []string{"alice", "bob", "carol"})
			if err != nil || !by["alice"] || !by["bob"] || by["carol"] {
				t.Fatalf("blockers of mallory: %v %v", by, err)
			}
			if by, _ := blocks.BlockersOf(ctx, "alice", []string{"mallory"}); by["mallory"] {
				t.Fatal("a block is not mutual")
			}
			if err := blocks.Unblock(ctx, "alice", "mallory"); err != nil {
				t.Fatal(err)
			}
			if err := blocks.Unblock(ctx, "alice", "nobody"); err != nil {
				t.Fatal(err)
			}
			if by, _ := blocks.BlockersOf(ctx, "mallory", []string{"alice"}); by["alice"] {
				t.Fatal("unblock kept the block")
			}

			if _, err := users.Create(ctx, domain.User{ID: "dana", Nickname: "d"}); err != nil {
				t.Fatal(err)
			}
			if p, err := users.DMPolicy(ctx, "dana"); err != nil || p != domain.DMEveryone {
				t.Fatalf("default dm_policy: %q %v", p, err)
			}
			nobody := domain.DMNobody
			if u, err := users.Update(ctx, "dana", store.UserUpdate{DMPolicy: &nobody}); err != nil || u.DMPolicy != domain.DMNobody {
				t.Fatalf("update dm_policy: %v %v", u, err)
			}
			if p, _ := users.DMPolicy(ctx, "dana"); p != domain.DMNobody {
				t.Fatalf("dm_policy after update: %q", p)
			}
			if _, err := users.DMPolicy(ctx, "ghost"); !errors.Is(err, domain.ErrUserNotFound) {
				t.Fatalf("unknown user: %v", err)
			}
		})
	}
}
