package store

import (
	"bufio"
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"

	"github.com/redis/go-redis/v9"
)

// RedisMemoryStat is one Redis server's memory as INFO memory reports it:
// used_memory and maxmemory in bytes (Max 0: no limit configured).
type RedisMemoryStat struct {
	Addr string
	Used int64
	Max  int64
}

// RedisMemory reads INFO memory from every master (one server when not a
// cluster). Nexo's streams, idempotency records and pending entries live
// there; with maxmemory and noeviction (compose.yaml) a full Redis refuses
// writes, so operators watch Used/Max (nexo_redis_used_memory_bytes,
// /readyz).
func RedisMemory(ctx context.Context, rdb redis.UniversalClient) ([]RedisMemoryStat, error) {
	var mu sync.Mutex
	var out []RedisMemoryStat
	err := ForEachMaster(ctx, rdb, func(ctx context.Context, node redis.UniversalClient) error {
		info, err := node.Info(ctx, "memory").Result()
		if err != nil {
			return err
		}
		st := parseMemoryInfo(info)
		if c, ok := node.(*redis.Client); ok {
			st.Addr = c.Options().Addr
		}
		mu.Lock()
		out = append(out, st)
		mu.Unlock()
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("redis info memory: %w", err)
	}
	return out, nil
}

func parseMemoryInfo(info string) RedisMemoryStat {
	var st RedisMemoryStat
	sc := bufio.NewScanner(strings.NewReader(info))
	for sc.Scan() {
		k, v, ok := strings.Cut(strings.TrimSpace(sc.Text()), ":")
		if !ok {
			continue
		}
		switch k {
		case "used_memory":
			st.Used, _ = strconv.ParseInt(v, 10, 64)
		case "maxmemory":
			st.Max, _ = strconv.ParseInt(v, 10, 64)
		}
	}
	return st
}
