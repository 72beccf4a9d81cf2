package store_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/nexo-im/nexo/store"
	"github.com/nexo-im/nexo/store/storetest"
)

func TestTokens(t *testing.T) {
	for name, open := range storetest.RedisBackends() {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			rdb, keys := open(t)
			tokens := store.NewTokens(rdb, keys)
			ctx := context.Background()
			active := func(user string, platform int, jti string) bool {
				t.Helper()
				ok, err := tokens.IsActive(ctx, user, platform, jti)
				if err != nil {
					t.Fatal(err)
				}
				return ok
			}

			if active("u1", 1, "j1") {
				t.Fatal("active before any login")
			}
			prev, err := tokens.Activate(ctx, "u1", 1, "j1", time.Hour)
			if err != nil || prev != "" {
				t.Fatalf("first activate: prev %q err %v", prev, err)
			}
			if ttl := rdb.PTTL(ctx, keys.Token("u1", 1)).Val(); ttl <= 59*time.Minute || ttl > time.Hour {
				t.Fatalf("token key TTL %v, want about 1h", ttl)
			}
			if !active("u1", 1, "j1") || active("u1", 1, "j0") || active("u1", 2, "j1") || active("u2", 1, "j1") {
				t.Fatal("j1 must be active for exactly u1/1")
			}

			// A second login on the same platform replaces (revokes) the first.
			prev, err = tokens.Activate(ctx, "u1", 1, "j2", time.Hour)
			if err != nil || prev != "j1" {
				t.Fatalf("second activate: prev %q err %v", prev, err)
			}
			if active("u1", 1, "j1") || !active("u1", 1, "j2") {
				t.Fatal("j2 must have replaced j1")
			}

			// Rotate only from the active token.
			if ok, err := tokens.Rotate(ctx, "u1", 1, "j1", "j3", time.Hour); err != nil || ok {
				t.Fatalf("rotate from a replaced token: ok %v err %v", ok, err)
			}
			if ok, err := tokens.Rotate(ctx, "u1", 1, "j2", "j3", 30*time.Minute); err != nil || !ok {
				t.Fatalf("rotate from the active token: ok %v err %v", ok, err)
			}
			if active("u1", 1, "j2") || !active("u1", 1, "j3") {
				t.Fatal("j3 must have replaced j2")
			}
			if ttl := rdb.PTTL(ctx, keys.Token("u1", 1)).Val(); ttl <= 29*time.Minute || ttl > 30*time.Minute {
				t.Fatalf("rotated key TTL %v, want about 30m", ttl)
			}

			// Revoke only the active token.
			if ok, err := tokens.Revoke(ctx, "u1", 1, "j2"); err != nil || ok {
				t.Fatalf("revoke a replaced token: ok %v err %v", ok, err)
			}
			if !active("u1", 1, "j3") {
				t.Fatal("revoking a stale jti must leave the active one")
			}
			if ok, err := tokens.Revoke(ctx, "u1", 1, "j3"); err != nil || !ok {
				t.Fatalf("revoke the active token: ok %v err %v", ok, err)
			}
			if active("u1", 1, "j3") || rdb.Exists(ctx, keys.Token("u1", 1)).Val() != 0 {
				t.Fatal("after revoke nothing is active")
			}
		})
	}
}

// TestTokensExpire checks the key goes away with the token, on a real Redis
// and on the embedded one (whose TTLs must follow the wall clock).
func TestTokensExpire(t *testing.T) {
	for name, open := range storetest.RedisBackends() {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			rdb, keys := open(t)
			tokens := store.NewTokens(rdb, keys)
			ctx := context.Background()
			if _, err := tokens.Activate(ctx, "u1", 5, "j1", 50*time.Millisecond); err != nil {
				t.Fatal(err)
			}
			deadline := time.Now().Add(5 * time.Second)
			for {
				ok, err := tokens.IsActive(ctx, "u1", 5, "j1")
				if err != nil {
					t.Fatal(err)
				}
				if !ok {
					return
				}
				if time.Now().After(deadline) {
					t.Fatal("token key did not expire within 5s")
				}
				time.Sleep(10 * time.Millisecond) // polling interval, not synchronisation
			}
		})
	}
}

func TestKeys(t *testing.T) {
	k := store.Keys{Prefix: "nexo"}
	tests := []struct{ got, want string }{
		{k.Token("u1", 5), "nexo:token:u1:5"},
		{k.Online("u1"), "nexo:online:u1"},
		{k.OnlineConns("u1"), "nexo:online:conns:u1"},
		{k.User("u1"), "nexo:user:u1"},
		{k.GroupMembers("g1"), "nexo:group:members:g1"},
		{k.SeqConv("si_a_b"), "nexo:seq:conv:si_a_b"},
		{k.Key("x", "y"), "nexo:x:y"},
	}
	for _, tc := range tests {
		if tc.got != tc.want {
			t.Errorf("got %q, want %q", tc.got, tc.want)
		}
	}
}

// TestRevokeAllRaisesFloor: RevokeAll deletes Nexo's records except the
// kept platform and refuses app-signed tokens issued until now, except the
// kept jti; a later revocation without a kept jti refuses that one too.
func TestRevokeAllRaisesFloor(t *testing.T) {
	for name, open := range storetest.RedisBackends() {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			rdb, keys := open(t)
			tokens := store.NewTokens(rdb, keys)
			ctx := context.Background()
			allowed := func(jti string, iat time.Time) bool {
				t.Helper()
				ok, err := tokens.ExternalAllowed(ctx, "u1", iat, jti)
				if err != nil {
					t.Fatal(err)
				}
				return ok
			}
			past := time.Now().Add(-time.Minute)
			for p := 1; p <= 3; p++ {
				if _, err := tokens.Activate(ctx, "u1", p, "j"+strconv.Itoa(p), time.Hour); err != nil {
					t.Fatal(err)
				}
			}
			if !allowed("ext:a", past) {
				t.Fatal("no revocation yet: app-signed tokens count")
			}
			revoked, err := tokens.RevokeAll(ctx, "u1", 2, "ext:a")
			if err != nil || len(revoked) != 2 || revoked[1] != "j1" || revoked[3] != "j3" {
				t.Fatalf("RevokeAll keeping platform 2: %v, %v", revoked, err)
			}
			if ok, _ := tokens.IsActive(ctx, "u1", 2, "j2"); !ok {
				t.Fatal("the kept platform's token must stay")
			}
			if !allowed("ext:a", past) || allowed("ext:b", past) {
				t.Fatal("after RevokeAll keeping ext:a: only ext:a counts")
			}
			if !allowed("ext:c", time.Now().Add(2*time.Second)) {
				t.Fatal("a token issued after the revocation counts")
			}
			if _, err := tokens.RevokeAll(ctx, "u1", 0, ""); err != nil {
				t.Fatal(err)
			}
			if allowed("ext:a", past) {
				t.Fatal("a revocation keeping nothing refuses ext:a too")
			}
		})
	}
}
