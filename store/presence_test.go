package store_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/nexo-im/nexo/store"
	"github.com/nexo-im/nexo/store/storetest"
)

func sessionsKey(keys store.Keys, user string) string { return keys.Key("sessions", "{"+user+"}") }

// TestPresence: a user is online from the first connection to the last
// disconnect, and the last disconnect stamps last_seen — on every Redis
// topology, Redis Cluster included (the disconnect script touches two keys
// of the user, which must share a slot).
func TestPresence(t *testing.T) {
	for name, open := range storetest.RedisBackends() {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			rdb, keys := open(t)
			const ttl = time.Minute
			p := store.NewPresence(rdb, keys, "i1#1", ttl)
			for i, c := range []struct {
				conn  string
				first bool
			}{{"c1", true}, {"c2", false}} {
				first, err := p.Connect(ctx, "ann", c.conn, 1+i)
				if err != nil || first != c.first {
					t.Fatalf("connect %s: first=%v err=%v, want first=%v", c.conn, first, err, c.first)
				}
			}
			if pttl := rdb.PTTL(ctx, sessionsKey(keys, "ann")).Val(); pttl <= 0 || pttl > ttl {
				t.Fatalf("TTL %v, want in (0, %v]", pttl, ttl)
			}
			if err := p.SetBackground(ctx, "ann", "c1", 1, true); err != nil {
				t.Fatal(err)
			}
			got, err := p.Lookup(ctx, []string{"ann", "bob"})
			if err != nil {
				t.Fatal(err)
			}
			if !got[0].Online || len(got[0].Platforms) != 2 || !got[0].Foreground || got[1].Online {
				t.Fatalf("lookup while connected: %+v", got)
			}
			before := time.Now().UnixMilli()
			for _, c := range []struct {
				conn string
				last bool
			}{{"c1", false}, {"c2", true}} {
				last, err := p.Disconnect(ctx, "ann", c.conn)
				if err != nil || last != c.last {
					t.Fatalf("disconnect %s: last=%v err=%v, want last=%v", c.conn, last, err, c.last)
				}
			}
			got, err = p.Lookup(ctx, []string{"ann"})
			if err != nil {
				t.Fatal(err)
			}
			if got[0].Online || got[0].LastSeen < before {
				t.Fatalf("lookup after the last disconnect: %+v (last_seen must be >= %d)", got[0], before)
			}
			// Disconnecting twice is harmless.
			if last, err := p.Disconnect(ctx, "ann", "c2"); err != nil || last {
				t.Fatalf("second disconnect: last=%v err=%v", last, err)
			}
		})
	}
}

// Routing reads the instances holding a user's connections: each once,
// whichever instance wrote them, only live ones with WithLive, and the
// previous release's online set too.
func TestPresenceInstancesOf(t *testing.T) {
	for name, open := range storetest.RedisBackends() {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			rdb, keys := open(t)
			a := store.NewPresence(rdb, keys, "a#1", time.Minute)
			b := store.NewPresence(rdb, keys, "b#2", time.Minute)
			must := func(_ bool, err error) {
				t.Helper()
				if err != nil {
					t.Fatal(err)
				}
			}
			must(a.Connect(ctx, "u1", "c1", 1))
			must(a.Connect(ctx, "u1", "c2", 2))
			must(b.Connect(ctx, "u1", "c3", 5))
			must(b.Connect(ctx, "u2", "c4", 5))
			// A user connected to an instance of the previous release.
			if err := rdb.SAdd(ctx, keys.Online("u3"), "old#7").Err(); err != nil {
				t.Fatal(err)
			}
			users := []string{"u1", "u2", "u3", "u4"}
			got, err := a.InstancesOf(ctx, users)
			if err != nil {
				t.Fatal(err)
			}
			want := [][]string{{"a#1", "b#2"}, {"b#2"}, {"old#7"}, nil}
			for i := range users {
				slices.Sort(got[i])
				if !slices.Equal(got[i], want[i]) {
					t.Fatalf("InstancesOf(%s) = %v, want %v", users[i], got[i], want[i])
				}
			}
			onlyA := a.WithLive(func(_ context.Context, in string) bool { return in == "a#1" })
			got, err = onlyA.InstancesOf(ctx, users)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got[0], []string{"a#1"}) || got[1] != nil || got[2] != nil {
				t.Fatalf("InstancesOf with only a live = %v", got)
			}
			must(b.Disconnect(ctx, "u2", "c4"))
			if got, err = a.InstancesOf(ctx, []string{"u2"}); err != nil || got[0] != nil {
				t.Fatalf("InstancesOf after the last disconnect = %v, %v", got, err)
			}
		})
	}
}

// Refresh renews every user it is given, in one call, and writes back the
// fields Redis lost.
func TestPresenceRefresh(t *testing.T) {
	for name, open := range storetest.RedisBackends() {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			rdb, keys := open(t)
			p := store.NewPresence(rdb, keys, "i1#1", time.Minute)
			sessions := []store.Session{{UserID: "ann", ConnID: "c-ann", PlatformID: 1},
				{UserID: "bob", ConnID: "c-bob", PlatformID: 2, Background: true}}
			for _, s := range sessions {
				if _, err := p.Connect(ctx, s.UserID, s.ConnID, s.PlatformID); err != nil {
					t.Fatal(err)
				}
				if err := rdb.PExpire(ctx, sessionsKey(keys, s.UserID), time.Second).Err(); err != nil {
					t.Fatal(err)
				}
			}
			if err := rdb.Del(ctx, sessionsKey(keys, "bob")).Err(); err != nil { // Redis lost it
				t.Fatal(err)
			}
			if err := p.Refresh(ctx, sessions); err != nil {
				t.Fatal(err)
			}
			for _, s := range sessions {
				if ttl := rdb.PTTL(ctx, sessionsKey(keys, s.UserID)).Val(); ttl < 30*time.Second {
					t.Errorf("%s's sessions expire in %v after a refresh, want about a minute", s.UserID, ttl)
				}
			}
			got, err := p.Lookup(ctx, []string{"ann", "bob"})
			if err != nil {
				t.Fatal(err)
			}
			if !got[0].Online || !got[0].Foreground || !got[1].Online || got[1].Foreground ||
				!slices.Equal(got[1].Platforms, []int{2}) {
				t.Fatalf("lookup after the refresh: %+v", got)
			}
			if err := p.Refresh(ctx, nil); err != nil {
				t.Errorf("refresh of nobody: %v", err)
			}
		})
	}
}

// A crashed instance never disconnects: its entries must still expire.
func TestPresenceExpiresWithoutRefresh(t *testing.T) {
	ctx := context.Background()
	rdb, prefix := storetest.Redis(t)
	keys := store.Keys{Prefix: prefix}
	p := store.NewPresence(rdb, keys, "crashed#1", 200*time.Millisecond)
	if _, err := p.Connect(ctx, "u1", "c1", 1); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		got, err := p.InstancesOf(ctx, []string{"u1"})
		if err != nil {
			t.Fatal(err)
		}
		if got[0] == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("presence of a crashed instance never expired")
		}
		time.Sleep(20 * time.Millisecond) // polling interval, not synchronisation
	}
}
