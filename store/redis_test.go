package store_test

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/nexo-im/nexo/configs"
	"github.com/nexo-im/nexo/store"
	"github.com/nexo-im/nexo/store/storetest"
)

func TestOpenRedis(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	rdb, err := store.OpenRedis(ctx, configs.Redis{Addr: storetest.RedisAddr(t), PoolSize: 2}, nil)
	if err != nil {
		t.Fatalf("open real redis: %v", err)
	}
	_ = rdb.Close()

	// A port nobody listens on: take one, then free it.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := ln.Addr().String()
	_ = ln.Close()
	if _, err := store.OpenRedis(ctx, configs.Redis{Addr: dead, PoolSize: 1}, nil); err == nil {
		t.Fatalf("open %s: want an error", dead)
	}
}

func TestEmbeddedRedis(t *testing.T) {
	addr, stop, err := store.StartEmbeddedRedis()
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	rdb, err := store.OpenRedis(ctx, configs.Redis{Addr: addr, PoolSize: 2}, nil)
	if err != nil {
		t.Fatalf("open embedded redis at %s: %v", addr, err)
	}
	defer rdb.Close()
	if err := rdb.Set(ctx, "k", "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
	// Keys with a TTL expire (the embedded server advances TTLs on a
	// ticker, not on every command).
	if err := rdb.Set(ctx, "short", "v", 300*time.Millisecond).Err(); err != nil {
		t.Fatal(err)
	}
	if n, _ := rdb.Exists(ctx, "short").Result(); n != 1 {
		t.Fatal("key with a 300 ms TTL gone at once")
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		n, err := rdb.Exists(ctx, "short").Result()
		if err != nil {
			t.Fatal(err)
		}
		if n == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("key with a 300 ms TTL still there after 5 s")
		}
		time.Sleep(20 * time.Millisecond) // polling interval, not synchronisation
	}
	if v, _ := rdb.Get(ctx, "k").Result(); v != "v" {
		t.Fatal("key without a TTL expired")
	}
	stop()
	stop() // idempotent
	if err := rdb.Ping(ctx).Err(); err == nil {
		t.Fatal("ping after stop: want an error")
	}
}
