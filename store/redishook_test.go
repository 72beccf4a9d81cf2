package store_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/redis/go-redis/v9"

	"github.com/nexo-im/nexo/configs"
	"github.com/nexo-im/nexo/store"
	"github.com/nexo-im/nexo/store/storetest"
)

// TestRedisErrorsCountOnlyFailures: nexo_redis_command_errors_total stays
// at zero through what a healthy server answers with an error on purpose
// — go-redis's best-effort CLIENT SETINFO on every dial (refused before
// Redis 7.2 and by the embedded Redis), and BUSYGROUP when a consumer
// group exists — and counts a real failure. Before, a clean 5 s run at 500
// msg/s counted 107 errors on Redis 7.0 (74 dials, 32 BUSYGROUPs).
func TestRedisErrorsCountOnlyFailures(t *testing.T) {
	embedded, stop, err := store.StartEmbeddedRedis()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	for _, tc := range []struct{ name, addr string }{
		{"redis", storetest.RedisAddr(t)},
		{"embedded", embedded},
	} {
		t.Run(tc.name, func(t *testing.T) {
			reg := prometheus.NewRegistry()
			rdb, err := store.NewRedisClient(configs.Redis{Mode: configs.RedisStandalone, Addr: tc.addr, PoolSize: 4},
				store.NewRedisMetrics(reg, configs.RedisStandalone))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = rdb.Close() })
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			key := fmt.Sprintf("nexo-test:hookerrs:%d", time.Now().UnixNano())
			t.Cleanup(func() { rdb.Del(context.Background(), key) })
			// Several connections, each dialled with its handshake.
			for i := 0; i < 4; i++ {
				if err := rdb.Ping(ctx).Err(); err != nil {
					t.Fatal(err)
				}
			}
			if err := rdb.XGroupCreateMkStream(ctx, key, "g", "0").Err(); err != nil {
				t.Fatal(err)
			}
			if err := rdb.XGroupCreateMkStream(ctx, key, "g", "0").Err(); err == nil {
				t.Fatal("creating the group again: want BUSYGROUP")
			}
			errorsCounted := func() float64 { return counterTotal(t, reg, "nexo_redis_command_errors_total") }
			if n := errorsCounted(); n != 0 {
				t.Fatalf("%v errors counted for a healthy server's expected replies", n)
			}
			if err := rdb.Incr(ctx, key).Err(); err == nil { // a stream: WRONGTYPE
				t.Fatal("INCR of a stream: want WRONGTYPE")
			}
			if n := errorsCounted(); n != 1 {
				t.Fatalf("%v errors counted after a failing command, want 1", n)
			}
			if got, err := testutil.GatherAndCount(reg, "nexo_redis_command_errors_total"); err != nil || got != 1 {
				t.Fatalf("series: %d, %v", got, err)
			}
		})
	}
}

// TestRedisCommandsCountedByName: nexo_redis_commands_total counts every
// command sent under its name, each command of a pipeline on its own.
func TestRedisCommandsCountedByName(t *testing.T) {
	reg := prometheus.NewRegistry()
	rdb, err := store.NewRedisClient(configs.Redis{Mode: configs.RedisStandalone, Addr: storetest.RedisAddr(t), PoolSize: 2},
		store.NewRedisMetrics(reg, configs.RedisStandalone))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = rdb.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	key := fmt.Sprintf("nexo-test:hookcmds:%d", time.Now().UnixNano())
	t.Cleanup(func() { rdb.Del(context.Background(), key) })
	count := func(name string) float64 {
		mfs, err := reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		for _, mf := range mfs {
			if mf.GetName() != "nexo_redis_commands_total" {
				continue
			}
			for _, m := range mf.GetMetric() {
				for _, l := range m.GetLabel() {
					if l.GetName() == "command" && l.GetValue() == name {
						return m.GetCounter().GetValue()
					}
				}
			}
		}
		return 0
	}
	before := count("incr")
	if err := rdb.Incr(ctx, key).Err(); err != nil {
		t.Fatal(err)
	}
	if _, err := rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		p.Incr(ctx, key)
		p.Incr(ctx, key)
		p.Get(ctx, key)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if got := count("incr") - before; got != 3 {
		t.Fatalf("incr counted %v times, want 3", got)
	}
	if count("get") < 1 {
		t.Fatal("get in a pipeline not counted")
	}
}
