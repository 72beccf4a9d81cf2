package store_test

import (
	"context"
	"net"
	"os"
	"os/exec"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/nexo-im/nexo/store"
)

// TestRedisMemory reads used_memory and maxmemory from a redis-server of
// the test's own, started with maxmemory and noeviction as compose.yaml does.
func TestRedisMemory(t *testing.T) {
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("redis-server not installed (CI must have it)")
		}
		t.Skip("redis-server not installed")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	_ = ln.Close()
	cmd := exec.Command(bin, "--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
		"--maxmemory", "64mb", "--maxmemory-policy", "noeviction")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:" + strconv.Itoa(port)})
	defer rdb.Close()
	ctx := context.Background()
	deadline := time.Now().Add(10 * time.Second)
	for rdb.Ping(ctx).Err() != nil {
		if time.Now().After(deadline) {
			t.Fatal("own redis-server did not start")
		}
		time.Sleep(20 * time.Millisecond)
	}
	stats, err := store.RedisMemory(ctx, rdb)
	if err != nil {
		t.Fatal(err)
	}
	if len(stats) != 1 || stats[0].Max != 64<<20 || stats[0].Used <= 0 || stats[0].Used >= stats[0].Max {
		t.Fatalf("stats %+v", stats)
	}
}
