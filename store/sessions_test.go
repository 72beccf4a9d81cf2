package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/nexo-im/nexo/store"
	"github.com/nexo-im/nexo/store/storetest"
)

// TestSessions: a user is online from the first connection to the last
// disconnect, and the last disconnect stamps last_seen — on every Redis
// topology, Redis Cluster included (the disconnect script touches two keys
// of the user, which must share a slot).
func TestSessions(t *testing.T) {
	for name, open := range storetest.RedisBackends() {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			rdb, keys := open(t)
			s := store.NewSessions(rdb, keys, "i1", time.Minute)
			for i, c := range []struct {
				conn  string
				first bool
			}{{"c1", true}, {"c2", false}} {
				first, err := s.Connect(ctx, "ann", c.conn, 1+i)
				if err != nil || first != c.first {
					t.Fatalf("connect %s: first=%v err=%v, want first=%v", c.conn, first, err, c.first)
				}
			}
			if err := s.SetBackground(ctx, "ann", "c1", 1, true); err != nil {
				t.Fatal(err)
			}
			got, err := s.Lookup(ctx, []string{"ann", "bob"})
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
				last, err := s.Disconnect(ctx, "ann", c.conn)
				if err != nil || last != c.last {
					t.Fatalf("disconnect %s: last=%v err=%v, want last=%v", c.conn, last, err, c.last)
				}
			}
			got, err = s.Lookup(ctx, []string{"ann"})
			if err != nil {
				t.Fatal(err)
			}
			if got[0].Online || got[0].LastSeen < before {
				t.Fatalf("lookup after the last disconnect: %+v (last_seen must be >= %d)", got[0], before)
			}
		})
	}
}

// Refresh renews the sessions of every user it is given, in one call.
func TestSessionsRefreshRenewsEveryUser(t *testing.T) {
	for name, open := range storetest.RedisBackends() {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			rdb, keys := open(t)
			s := store.NewSessions(rdb, keys, "i1", time.Minute)
			users := []string{"ann", "bob"}
			for _, u := range users {
				if _, err := s.Connect(ctx, u, "c-"+u, 1); err != nil {
					t.Fatal(err)
				}
				if err := rdb.PExpire(ctx, keys.Key("sessions", "{"+u+"}"), time.Second).Err(); err != nil {
					t.Fatal(err)
				}
			}
			if err := s.Refresh(ctx, users); err != nil {
				t.Fatal(err)
			}
			for _, u := range users {
				if ttl := rdb.PTTL(ctx, keys.Key("sessions", "{"+u+"}")).Val(); ttl < 30*time.Second {
					t.Errorf("%s's sessions expire in %v after a refresh, want about a minute", u, ttl)
				}
			}
			if err := s.Refresh(ctx, nil); err != nil {
				t.Errorf("refresh of nobody: %v", err)
			}
		})
	}
}
