package store_test

import (
	"context"
	"errors"
	"testing"

	"github.com/nexo-im/nexo/domain"
	"github.com/nexo-im/nexo/store"
	"github.com/nexo-im/nexo/store/storetest"
)

// TestPushDeviceRepo: a token re-registered keeps its ID and moves to the
// new owner; the per-user cap forgets the least recently registered;
// Delete is owner-only; DeletePlatform and DeleteGone forget what they
// name; mentions-only settings are set, listed and cleared.
func TestPushDeviceRepo(t *testing.T) {
	for _, b := range storetest.Backends() {
		t.Run(b.Name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			repo, err := store.NewPushDeviceRepo(ctx, b.Open(t))
			if err != nil {
				t.Fatal(err)
			}
			reg := func(user, token string, platform int) store.PushDevice {
				t.Helper()
				d, err := repo.Register(ctx, store.PushDevice{UserID: user, Provider: "fcm", Token: token, PlatformID: platform}, 2)
				if err != nil {
					t.Fatal(err)
				}
				return d
			}
			a := reg("bob", "t1", 2)
			moved := reg("carol", "t1", 2)
			if moved.ID != a.ID || moved.UserID != "carol" {
				t.Fatalf("re-registration: %+v (was %+v)", moved, a)
			}
			reg("bob", "t2", 2)
			reg("bob", "t3", 1)
			reg("bob", "t4", 1) // over the cap of 2: t2 goes
			list, err := repo.List(ctx, "bob")
			if err != nil || len(list) != 2 || list[0].Token != "t4" || list[1].Token != "t3" {
				t.Fatalf("bob's devices %+v %v", list, err)
			}
			if err := repo.Delete(ctx, "bob", moved.ID); !errors.Is(err, domain.ErrPushDeviceNotFound) {
				t.Fatalf("bob deleting carol's device: %v", err)
			}
			if n, err := repo.DeletePlatform(ctx, "bob", 1); err != nil || n != 2 {
				t.Fatalf("logout of platform 1: %d %v", n, err)
			}
			if err := repo.DeleteGone(ctx, moved.ID, "not-its-token"); err != nil {
				t.Fatal(err)
			}
			by, _ := repo.OfUsers(ctx, []string{"carol", "bob"})
			if len(by["carol"]) != 1 || len(by["bob"]) != 0 {
				t.Fatalf("a gone answer for another token removed the device: %+v", by)
			}
			if err := repo.DeleteGone(ctx, moved.ID, "t1"); err != nil {
				t.Fatal(err)
			}
			if by, _ = repo.OfUsers(ctx, []string{"carol"}); len(by["carol"]) != 0 {
				t.Fatalf("gone device kept: %+v", by)
			}
			for range 2 {
				if err := repo.SetMentionsOnly(ctx, "bob", "sg_g1", true); err != nil {
					t.Fatal(err)
				}
			}
			only, err := repo.MentionsOnly(ctx, "sg_g1", []string{"bob", "carol"})
			if err != nil || !only["bob"] || only["carol"] {
				t.Fatalf("mentions-only %v %v", only, err)
			}
			if err := repo.SetMentionsOnly(ctx, "bob", "sg_g1", false); err != nil {
				t.Fatal(err)
			}
			if ids, _ := repo.MentionsOnlyOf(ctx, "bob"); len(ids) != 0 {
				t.Fatalf("cleared setting still listed: %v", ids)
			}
		})
	}
}
