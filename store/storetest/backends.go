package storetest

import (
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/nexo-im/nexo/store"
)

// RedisBackend opens a Redis for a test and returns it with a key prefix.
type RedisBackend func(t *testing.T) (redis.UniversalClient, store.Keys)

// RedisBackends lists the Redis servers every Redis-backed contract runs
// against: the real one (NEXO_TEST_REDIS_ADDR) and the embedded in-process
// one of the development default, so both modes run the same scripts.
func RedisBackends() map[string]RedisBackend {
	return map[string]RedisBackend{
		"redis": func(t *testing.T) (redis.UniversalClient, store.Keys) {
			rdb, prefix := Redis(t)
			return rdb, store.Keys{Prefix: prefix}
		},
		"embedded": func(t *testing.T) (redis.UniversalClient, store.Keys) {
			addr, stop, err := store.StartEmbeddedRedis()
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(stop)
			rdb := redis.NewClient(&redis.Options{Addr: addr})
			t.Cleanup(func() { _ = rdb.Close() })
			return rdb, store.Keys{Prefix: "nexo"}
		},
	}
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
