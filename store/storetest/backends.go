package storetest

import (
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/nexo-im/nexo/store"
	"github.com/nexo-im/nexo/store/redistest"
)

// RedisBackend opens a Redis for a test and returns it with a key prefix.
type RedisBackend func(t *testing.T) (redis.UniversalClient, store.Keys)

// RedisBackends lists the Redis servers every Redis-backed contract runs
// against: the real one (NEXO_TEST_REDIS_ADDR), the embedded in-process one
// of the development default, and the Redis Cluster (3 masters + 3
// replicas) and Sentinel topologies started from redis-server for the test
// binary (see RedisTopologies), so every mode runs the same scripts.
func RedisBackends() map[string]RedisBackend {
	out := RedisTopologies()
	out["embedded"] = func(t *testing.T) (redis.UniversalClient, store.Keys) {
		addr, stop, err := store.StartEmbeddedRedis()
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(stop)
		rdb := redis.NewClient(&redis.Options{Addr: addr})
		t.Cleanup(func() { _ = rdb.Close() })
		return rdb, store.Keys{Prefix: "nexo"}
	}
	return out
}

// RedisTopologies lists the real Redis deployments Nexo supports, each with
// a key prefix of the test's own: "redis" (standalone, NEXO_TEST_REDIS_ADDR),
// "cluster" and "sentinel" (RedisCluster, RedisSentinel).
func RedisTopologies() map[string]RedisBackend {
	wrap := func(open func(t testing.TB) (redis.UniversalClient, string)) RedisBackend {
		return func(t *testing.T) (redis.UniversalClient, store.Keys) {
			rdb, prefix := open(t)
			return rdb, store.Keys{Prefix: prefix}
		}
	}
	return map[string]RedisBackend{
		"redis":    wrap(func(t testing.TB) (redis.UniversalClient, string) { return Redis(t) }),
		"cluster":  wrap(RedisCluster),
		"sentinel": wrap(RedisSentinel),
	}
}

// RedisCluster returns a client of the test binary's Redis Cluster (3
// masters + 3 replicas, started on first use; redistest.Main in TestMain
// stops it) and a key prefix unique to the test, deleted at its end.
// Without redis-server it skips, or fails under CI=true.
func RedisCluster(t testing.TB) (redis.UniversalClient, string) {
	t.Helper()
	c, err := redistest.SharedCluster()
	if err != nil {
		topologyUnavailable(t, "Redis Cluster", err)
	}
	return prefixed(t, c.Client())
}

// RedisSentinel is RedisCluster for the Sentinel setup (1 master, 1
// replica, 3 sentinels); the client is a FailoverClient.
func RedisSentinel(t testing.TB) (redis.UniversalClient, string) {
	t.Helper()
	s, err := redistest.SharedSentinel()
	if err != nil {
		topologyUnavailable(t, "Redis Sentinel", err)
	}
	return prefixed(t, s.Client())
}

func prefixed(t testing.TB, rdb redis.UniversalClient) (redis.UniversalClient, string) {
	prefix := RandomName("t")
	t.Cleanup(func() {
		DeletePrefix(rdb, prefix)
		_ = rdb.Close()
	})
	return rdb, prefix
}

// AddUsers inserts users (no password) straight into the users table, 500
// to a statement, for tests that need many members fast.
func AddUsers(t testing.TB, db *store.DB, ids ...string) {
	t.Helper()
	for start := 0; start < len(ids); start += 500 {
		chunk := ids[start:min(start+500, len(ids))]
		var sb strings.Builder
		args := make([]any, 0, len(chunk))
		sb.WriteString("INSERT INTO users (id, nickname, created_at, updated_at) VALUES ")
		for i, id := range chunk {
			if i > 0 {
				sb.WriteString(",")
			}
			sb.WriteString("(?, 'n', 1, 1)")
			args = append(args, id)
		}
		if err := db.Gorm.Exec(sb.String(), args...).Error; err != nil {
			t.Fatal(err)
		}
	}
}

// topologyUnavailable fails under CI=true (.ci/run installs redis-server
// and redis-tools) and skips elsewhere.
func topologyUnavailable(t testing.TB, what string, err error) {
	t.Helper()
	msg := fmt.Sprintf("%s could not start (%v); install redis-server and redis-tools (redis-cli)", what, err)
	if os.Getenv("CI") == "true" {
		t.Fatalf("CI=true: %s", msg)
	}
	t.Skip(msg)
}
