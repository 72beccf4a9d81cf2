package store

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/redis/go-redis/v9"
)

// NewDBPoolCollector exports database/sql's pool statistics of db as
// go_sql_* metrics (open, in use, idle connections, waits, wait time)
// labelled db_name=<dialect> (prometheus' DBStatsCollector).
func NewDBPoolCollector(db *DB) (prometheus.Collector, error) {
	sqlDB, err := db.Gorm.DB()
	if err != nil {
		return nil, err
	}
	return collectors.NewDBStatsCollector(sqlDB, string(db.Dialect)), nil
}

// redisPoolCollector exports go-redis's pool statistics (summed over every
// node of a cluster client) at scrape time.
type redisPoolCollector struct {
	rdb                    redis.UniversalClient
	hits, misses, timeouts *prometheus.Desc
	total, idle, stale     *prometheus.Desc
}

// NewRedisPoolCollector exports nexo_redis_pool_{hits,misses,timeouts}_total
// and nexo_redis_pool_{total,idle,stale}_connections for rdb.
func NewRedisPoolCollector(rdb redis.UniversalClient) prometheus.Collector {
	d := func(name, help string) *prometheus.Desc {
		return prometheus.NewDesc("nexo_redis_pool_"+name, help, nil, nil)
	}
	return &redisPoolCollector{rdb: rdb,
		hits:     d("hits_total", "Times a free connection was found in the Redis pool."),
		misses:   d("misses_total", "Times no free connection was in the Redis pool (a new one was dialled)."),
		timeouts: d("timeouts_total", "Times waiting for a Redis pool connection timed out."),
		total:    d("total_connections", "Connections in the Redis pool."),
		idle:     d("idle_connections", "Idle connections in the Redis pool."),
		stale:    d("stale_connections_total", "Stale connections removed from the Redis pool."),
	}
}

// Describe implements prometheus.Collector.
func (c *redisPoolCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.hits, c.misses, c.timeouts, c.total, c.idle, c.stale} {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (c *redisPoolCollector) Collect(ch chan<- prometheus.Metric) {
	s := c.rdb.PoolStats()
	ch <- prometheus.MustNewConstMetric(c.hits, prometheus.CounterValue, float64(s.Hits))
	ch <- prometheus.MustNewConstMetric(c.misses, prometheus.CounterValue, float64(s.Misses))
	ch <- prometheus.MustNewConstMetric(c.timeouts, prometheus.CounterValue, float64(s.Timeouts))
	ch <- prometheus.MustNewConstMetric(c.total, prometheus.GaugeValue, float64(s.TotalConns))
	ch <- prometheus.MustNewConstMetric(c.idle, prometheus.GaugeValue, float64(s.IdleConns))
	ch <- prometheus.MustNewConstMetric(c.stale, prometheus.CounterValue, float64(s.StaleConns))
}
