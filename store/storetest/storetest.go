// Package storetest gives tests their own real backends: a fresh MariaDB
// database per test (NEXO_TEST_MYSQL_DSN), a fresh SQLite file, and a Redis
// client with a key prefix of its own (NEXO_TEST_REDIS_ADDR), so packages run
// in parallel. Under CI=true an unreachable backend fails the test; elsewhere
// it skips with a message saying how to enable it.
package storetest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/redis/go-redis/v9"

	"github.com/nexo-im/nexo/configs"
	"github.com/nexo-im/nexo/store"
)

// Env variables naming the test backends.
const (
	EnvMySQL = "NEXO_TEST_MYSQL_DSN"
	EnvRedis = "NEXO_TEST_REDIS_ADDR"
)

// unavailable fails under CI=true and skips elsewhere.
func unavailable(t testing.TB, what, env, example string, err error) {
	t.Helper()
	msg := fmt.Sprintf("%s not reachable (%v); set %s, e.g. %s=%q", what, err, env, env, example)
	if os.Getenv("CI") == "true" {
		t.Fatalf("CI=true: %s", msg)
	}
	t.Skip(msg)
}

// RandomName returns prefix followed by 10 random hex characters.
func RandomName(prefix string) string {
	var b [5]byte
	_, _ = rand.Read(b[:])
	return prefix + hex.EncodeToString(b[:])
}

// MySQLDSN returns the DSN of a fresh, empty database on the test server,
// dropped when the test ends.
func MySQLDSN(t testing.TB) string {
	t.Helper()
	base := os.Getenv(EnvMySQL)
	const example = "root:@tcp(127.0.0.1:3306)/nexo_test?charset=utf8mb4&parseTime=true&loc=UTC"
	if base == "" {
		unavailable(t, "MariaDB", EnvMySQL, example, fmt.Errorf("%s is empty", EnvMySQL))
	}
	cfg, err := mysql.ParseDSN(base)
	if err != nil {
		t.Fatalf("%s: %v", EnvMySQL, err)
	}
	name := RandomName("nexo_t_")
	admin := *cfg
	admin.DBName = ""
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	adminDB, err := store.OpenMySQL(ctx, configs.MySQL{DSN: admin.FormatDSN(), MaxOpenConns: 2, MaxIdleConns: 1, ConnMaxLifetime: time.Minute})
	if err != nil {
		unavailable(t, "MariaDB", EnvMySQL, example, err)
	}
	if err := adminDB.Gorm.Exec("CREATE DATABASE `" + name + "` CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci").Error; err != nil {
		t.Fatalf("create test database: %v", err)
	}
	t.Cleanup(func() {
		if os.Getenv("NEXO_TEST_KEEP_DB") == "" {
			_ = adminDB.Gorm.Exec("DROP DATABASE IF EXISTS `" + name + "`").Error
		}
		_ = adminDB.Close()
	})
	cfg.DBName = name
	return cfg.FormatDSN()
}

// MySQL opens a fresh, migrated MariaDB database for the test.
func MySQL(t testing.TB) *store.DB {
	t.Helper()
	db, err := store.OpenMySQL(context.Background(), configs.MySQL{DSN: MySQLDSN(t), MaxOpenConns: 16, MaxIdleConns: 8, ConnMaxLifetime: time.Hour})
	if err != nil {
		t.Fatalf("open test database: %v", err)
	}
	t.Cleanup(func() { _ = db.Close() })
	if _, err := db.Migrate(context.Background()); err != nil {
		t.Fatalf("migrate: %v", err)
	}
	return db
}

// SQLite opens a fresh, migrated SQLite file in the test's temp dir.
func SQLite(t testing.TB) *store.DB {
	t.Helper()
	db, err := store.OpenSQLite(context.Background(), filepath.Join(t.TempDir(), "nexo.db"))
	if err != nil {
		t.Fatalf("open sqlite: %v", err)
	}
	t.Cleanup(func() { _ = db.Close() })
	if _, err := db.Migrate(context.Background()); err != nil {
		t.Fatalf("migrate: %v", err)
	}
	return db
}

// Backend is one database backend for contract tests.
type Backend struct {
	Name string
	Open func(t testing.TB) *store.DB
}

// Backends lists the databases every repository contract runs against.
func Backends() []Backend {
	return []Backend{{"mariadb", MySQL}, {"sqlite", SQLite}}
}

// RedisAddr returns the test Redis address, or fails/skips.
func RedisAddr(t testing.TB) string {
	t.Helper()
	addr := os.Getenv(EnvRedis)
	if addr == "" {
		unavailable(t, "Redis", EnvRedis, "127.0.0.1:6379", fmt.Errorf("%s is empty", EnvRedis))
	}
	return addr
}

// Redis returns a client of the test Redis and a key prefix unique to the
// test; keys under the prefix are deleted when the test ends.
func Redis(t testing.TB) (*redis.Client, string) {
	t.Helper()
	addr := RedisAddr(t)
	rdb := redis.NewClient(&redis.Options{Addr: addr, PoolSize: 32})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := rdb.Ping(ctx).Err(); err != nil {
		_ = rdb.Close()
		unavailable(t, "Redis", EnvRedis, "127.0.0.1:6379", err)
	}
	prefix := RandomName("t")
	t.Cleanup(func() {
		DeletePrefix(rdb, prefix)
		_ = rdb.Close()
	})
	return rdb, prefix
}

// DeletePrefix deletes every key that starts with prefix + ":", on every
// master of a Redis Cluster.
func DeletePrefix(rdb redis.UniversalClient, prefix string) {
	// The shared test Redis holds every helper's keys: a SCAN of it can take
	// long on a loaded machine, and a cut-short scan leaves keys behind.
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	_ = store.ForEachMaster(ctx, rdb, func(ctx context.Context, node redis.UniversalClient) error {
		iter := node.Scan(ctx, 0, prefix+":*", 10000).Iterator()
		var keys []string
		for iter.Next(ctx) {
			if k := iter.Val(); strings.HasPrefix(k, prefix+":") {
				keys = append(keys, k)
			}
		}
		for _, k := range keys {
			node.Del(ctx, k)
		}
		return nil
	})
}
