package ws

import (
	"context"
	"testing"
	"time"

	"github.com/nexo-im/nexo/configs"
	"github.com/nexo-im/nexo/store"
	"github.com/nexo-im/nexo/store/storetest"
)

// The online key exists (with its TTL) from the user's first connection to
// the last disconnect, against a real Redis.
func TestPresenceFollowsConnections(t *testing.T) {
	rdb, prefix := storetest.Redis(t)
	keys := store.Keys{Prefix: prefix}
	cfg := testConfig()
	cfg.LoginPolicy = configs.LoginMulti
	cfg.PresenceTTL = time.Minute
	e := newEnv(t, cfg, withPresence(store.NewPresence(rdb, keys, "gw-test", cfg.PresenceTTL)))
	ctx := context.Background()
	key := keys.Online("alice")
	exists := func() bool {
		n, err := rdb.Exists(ctx, key).Result()
		if err != nil {
			t.Fatal(err)
		}
		return n == 1
	}

	if exists() {
		t.Fatal("online key before connecting")
	}
	c1 := e.dial("alice", 5)
	c2 := e.dial("alice", 2)
	waitFor(t, 5*time.Second, "online key", exists)
	if ttl := rdb.PTTL(ctx, key).Val(); ttl <= 0 || ttl > cfg.PresenceTTL {
		t.Fatalf("TTL %v, want in (0, %v]", ttl, cfg.PresenceTTL)
	}

	_ = c1.conn.Close()
	waitFor(t, 5*time.Second, "first disconnect", func() bool { return e.srv.ConnCount() == 1 })
	if !exists() {
		t.Fatal("online key removed while a connection remains")
	}
	_ = c2.conn.Close()
	waitFor(t, 5*time.Second, "online key removed on last disconnect", func() bool { return !exists() })
}

// Heartbeats refresh the TTL: with a TTL shorter than the test, the key
// survives as long as the connection does.
func TestPresenceRefreshedByHeartbeats(t *testing.T) {
	rdb, prefix := storetest.Redis(t)
	keys := store.Keys{Prefix: prefix}
	cfg := testConfig()
	cfg.PingInterval = 50 * time.Millisecond
	cfg.PongWait = 10 * time.Second
	cfg.PresenceTTL = 300 * time.Millisecond
	e := newEnv(t, cfg, withPresence(store.NewPresence(rdb, keys, "gw-test", cfg.PresenceTTL)))
	c := e.dial("alice", 5)
	start := time.Now()
	waitFor(t, 10*time.Second, "pings across 3 TTLs", func() bool {
		return time.Since(start) > 3*cfg.PresenceTTL && c.pings.Load() >= 6
	})
	if n := rdb.Exists(context.Background(), keys.Online("alice")).Val(); n != 1 {
		t.Fatal("presence expired although heartbeats kept running")
	}
}
