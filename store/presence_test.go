package store_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/nexo-im/nexo/store"
	"github.com/nexo-im/nexo/store/storetest"
)

func TestPresence(t *testing.T) {
	for name, open := range storetest.RedisBackends() {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			rdb, keys := open(t)
			const ttl = 30 * time.Second
			a := store.NewPresence(rdb, keys, "gw-a", ttl)
			b := store.NewPresence(rdb, keys, "gw-b", ttl)

			online := func(user string) bool {
				t.Helper()
				ok, err := a.IsOnline(ctx, user)
				if err != nil {
					t.Fatal(err)
				}
				return ok
			}
			must := func(err error) {
				t.Helper()
				if err != nil {
					t.Fatal(err)
				}
			}

			if online("u1") {
				t.Fatal("u1 online before any connection")
			}
			must(a.MarkOnline(ctx, "u1"))
			if !online("u1") {
				t.Fatal("u1 not online after MarkOnline")
			}
			pttl, err := rdb.PTTL(ctx, keys.Online("u1")).Result()
			must(err)
			if pttl <= 0 || pttl > ttl {
				t.Fatalf("TTL of %s = %v, want in (0, %v]", keys.Online("u1"), pttl, ttl)
			}

			// Connected through two instances: one leaving keeps the user online.
			must(b.MarkOnline(ctx, "u1"))
			must(a.MarkOffline(ctx, "u1"))
			if !online("u1") {
				t.Fatal("u1 offline although instance b still holds a connection")
			}
			must(b.MarkOffline(ctx, "u1"))
			if online("u1") {
				t.Fatal("u1 online after the last instance left")
			}
			// Offline twice is harmless.
			must(b.MarkOffline(ctx, "u1"))

			must(a.MarkOnline(ctx, "u2"))
			must(b.MarkOnline(ctx, "u3"))
			got, err := a.OnlineOf(ctx, []string{"u1", "u2", "u3", "u4"})
			must(err)
			if want := []string{"u2", "u3"}; !slices.Equal(got, want) {
				t.Fatalf("OnlineOf = %v, want %v", got, want)
			}
		})
	}
}

// A crashed instance never calls MarkOffline: its claim must still expire.
func TestPresenceExpiresWithoutRefresh(t *testing.T) {
	ctx := context.Background()
	rdb, prefix := storetest.Redis(t)
	keys := store.Keys{Prefix: prefix}
	p := store.NewPresence(rdb, keys, "gw-crashed", 200*time.Millisecond)
	if err := p.MarkOnline(ctx, "u1"); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		ok, err := p.IsOnline(ctx, "u1")
		if err != nil {
			t.Fatal(err)
		}
		if !ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("presence of a crashed instance never expired")
		}
		time.Sleep(20 * time.Millisecond) // polling interval, not synchronisation
	}
}
