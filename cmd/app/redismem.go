package app

import (
	"context"
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"

	"github.com/nexo-im/nexo/store"
)

// redisMemoryCollector exports every Redis master's used_memory and
// maxmemory at scrape time (with maxmemory + noeviction a full
// Redis refuses writes; operators alert on the ratio).
type redisMemoryCollector struct {
	rdb        redis.UniversalClient
	used, max_ *prometheus.Desc
}

func newRedisMemoryCollector(rdb redis.UniversalClient) *redisMemoryCollector {
	return &redisMemoryCollector{
		rdb: rdb,
		used: prometheus.NewDesc("nexo_redis_used_memory_bytes",
			"Redis used_memory (INFO memory), per master.", []string{"addr"}, nil),
		max_: prometheus.NewDesc("nexo_redis_maxmemory_bytes",
			"Redis maxmemory, per master (0: no limit; compose.yaml sets one with noeviction).", []string{"addr"}, nil),
	}
}

func (c *redisMemoryCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.used; ch <- c.max_ }

func (c *redisMemoryCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	stats, err := store.RedisMemory(ctx, c.rdb)
	if err != nil {
		return // Redis down: /readyz and the Redis error metrics say so
	}
	for _, s := range stats {
		ch <- prometheus.MustNewConstMetric(c.used, prometheus.GaugeValue, float64(s.Used), s.Addr)
		ch <- prometheus.MustNewConstMetric(c.max_, prometheus.GaugeValue, float64(s.Max), s.Addr)
	}
}

// redisMemoryCheck fails when a Redis server uses redis.memory_degraded_ratio
// of its maxmemory or more (servers without maxmemory never fail it).
func redisMemoryCheck(rdb redis.UniversalClient, ratio float64) func(ctx context.Context) error {
	return func(ctx context.Context) error {
		if ratio <= 0 {
			return nil
		}
		stats, err := store.RedisMemory(ctx, rdb)
		if err != nil {
			return nil // reachability is the Ready check's business
		}
		for _, s := range stats {
			if s.Max > 0 && float64(s.Used) >= ratio*float64(s.Max) {
				return fmt.Errorf("memory %d of maxmemory %d bytes (%.0f%%, threshold %.0f%%): writes fail at 100%% (noeviction)",
					s.Used, s.Max, 100*float64(s.Used)/float64(s.Max), 100*ratio)
			}
		}
		return nil
	}
}
