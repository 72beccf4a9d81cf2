package store_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nexo-im/nexo/domain"
	"github.com/nexo-im/nexo/store"
	"github.com/nexo-im/nexo/store/storetest"
)

// TestUserRepoContract runs the same expectations against every backend.
func TestUserRepoContract(t *testing.T) {
	for _, b := range storetest.Backends() {
		t.Run(b.Name, func(t *testing.T) {
			t.Parallel()
			repo := store.NewUserRepo(b.Open(t))
			ctx := context.Background()
			before := time.Now().UnixMilli()

			nick := strings.Repeat("界", domain.MaxNicknameLen) // utf8mb4, full length
			created, err := repo.Create(ctx, domain.User{ID: "alice", Nickname: nick, Avatar: "https://a/1.png", PasswordHash: "h1"})
			if err != nil {
				t.Fatalf("create: %v", err)
			}
			if created.CreatedAt < before || created.UpdatedAt != created.CreatedAt {
				t.Fatalf("times not set: %+v (before %d)", created, before)
			}

			_, err = repo.Create(ctx, domain.User{ID: "alice", Nickname: "other", PasswordHash: "h2"})
			if !errors.Is(err, domain.ErrUserExists) {
				t.Fatalf("duplicate create: got %v, want ErrUserExists", err)
			}

			got, err := repo.Get(ctx, "alice")
			if err != nil {
				t.Fatalf("get: %v", err)
			}
			if got != created {
				t.Fatalf("get = %+v, want %+v (the duplicate must not have overwritten)", got, created)
			}

			for _, id := range []string{"bob", "ALICE", ""} {
				if _, err := repo.Get(ctx, id); !errors.Is(err, domain.ErrUserNotFound) {
					t.Errorf("get %q: got %v, want ErrUserNotFound", id, err)
				}
			}

			newNick := "Alice"
			updated, err := repo.Update(ctx, "alice", store.UserUpdate{Nickname: &newNick})
			if err != nil {
				t.Fatalf("update nickname: %v", err)
			}
			if updated.Nickname != "Alice" || updated.Avatar != created.Avatar || updated.UpdatedAt < created.UpdatedAt || updated.CreatedAt != created.CreatedAt {
				t.Fatalf("after nickname update: %+v", updated)
			}
			empty := ""
			updated, err = repo.Update(ctx, "alice", store.UserUpdate{Avatar: &empty})
			if err != nil || updated.Avatar != "" || updated.Nickname != "Alice" || updated.PasswordHash != "h1" {
				t.Fatalf("after clearing avatar: %+v, %v", updated, err)
			}
			if _, err := repo.Update(ctx, "nobody", store.UserUpdate{Nickname: &newNick}); !errors.Is(err, domain.ErrUserNotFound) {
				t.Fatalf("update unknown: got %v, want ErrUserNotFound", err)
			}
			if _, err := repo.Update(ctx, "ALICE", store.UserUpdate{Nickname: &newNick}); !errors.Is(err, domain.ErrUserNotFound) {
				t.Fatalf("update case variant: got %v, want ErrUserNotFound", err)
			}

			// group_invites: everyone until chosen otherwise.
			if created.GroupInvites != domain.InvitesEveryone {
				t.Fatalf("new user's group_invites %q, want everyone", created.GroupInvites)
			}
			nobody := domain.InvitesNobody
			updated, err = repo.Update(ctx, "alice", store.UserUpdate{GroupInvites: &nobody})
			if err != nil || updated.GroupInvites != domain.InvitesNobody || updated.Nickname != "Alice" {
				t.Fatalf("after group_invites update: %+v, %v", updated, err)
			}
			if _, err := repo.Create(ctx, domain.User{ID: "bob", Nickname: "Bob", GroupInvites: domain.InvitesSharedGroups}); err != nil {
				t.Fatal(err)
			}
			choices, err := repo.GroupInvites(ctx, []string{"alice", "bob", "ghost"})
			if err != nil || len(choices) != 2 || choices["alice"] != domain.InvitesNobody || choices["bob"] != domain.InvitesSharedGroups {
				t.Fatalf("GroupInvites = %v, %v", choices, err)
			}
		})
	}
}

func TestUserRepoExisting(t *testing.T) {
	for _, b := range storetest.Backends() {
		t.Run(b.Name, func(t *testing.T) {
			t.Parallel()
			repo := store.NewUserRepo(b.Open(t))
			ctx := context.Background()
			// More IDs than one IN chunk, so chunking is exercised.
			var ids []string
			for i := range 620 {
				id := fmt.Sprintf("u%04d", i)
				ids = append(ids, id)
				if i%3 == 0 {
					if _, err := repo.Create(ctx, domain.User{ID: id, Nickname: id, PasswordHash: "h"}); err != nil {
						t.Fatal(err)
					}
				}
			}
			tests := []struct {
				name string
				ids  []string
				want []string
			}{
				{"empty", nil, nil},
				{"none exist", []string{"x", "y"}, nil},
				{"mixed with duplicates", []string{"u0000", "u0001", "u0000", "U0003", "u0003"}, []string{"u0000", "u0003"}},
				{"many", ids, everyThird(ids)},
			}
			for _, tc := range tests {
				got, err := repo.Existing(ctx, tc.ids)
				if err != nil {
					t.Fatalf("%s: %v", tc.name, err)
				}
				if len(got) != len(tc.want) {
					t.Errorf("%s: got %d ids, want %d", tc.name, len(got), len(tc.want))
				}
				for _, id := range tc.want {
					if !got[id] {
						t.Errorf("%s: %s missing", tc.name, id)
					}
				}
			}
		})
	}
}

func everyThird(ids []string) []string {
	var out []string
	for i := 0; i < len(ids); i += 3 {
		out = append(out, ids[i])
	}
	return out
}

// IDs are stored as registered and looked up exactly, but unique without
// letter case on every backend: "Casey" cannot register beside "casey"
// (issue 13 item 15).
func TestUserIDsAreUniqueWithoutCase(t *testing.T) {
	for _, b := range storetest.Backends() {
		t.Run(b.Name, func(t *testing.T) {
			t.Parallel()
			repo := store.NewUserRepo(b.Open(t))
			ctx := context.Background()
			if _, err := repo.Create(ctx, domain.User{ID: "Casey", Nickname: "C", PasswordHash: "h"}); err != nil {
				t.Fatal(err)
			}
			for _, id := range []string{"casey", "CASEY", "Casey"} {
				if _, err := repo.Create(ctx, domain.User{ID: id, Nickname: id, PasswordHash: "h"}); !errors.Is(err, domain.ErrUserExists) {
					t.Fatalf("create %s beside Casey: %v, want ErrUserExists", id, err)
				}
			}
			if u, err := repo.Get(ctx, "Casey"); err != nil || u.ID != "Casey" {
				t.Fatalf("get Casey = %+v, %v", u, err)
			}
			if _, err := repo.Get(ctx, "casey"); !errors.Is(err, domain.ErrUserNotFound) {
				t.Fatalf("get casey: %v, want ErrUserNotFound (IDs match exactly)", err)
			}
		})
	}
}
