package main

import (
	"context"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/nexo-im/nexo/configs"
	"github.com/nexo-im/nexo/store/redistest"
)

// The redis-cluster-5k step (the Redis Cluster target): single chat at 5,000
// msg/s with Redis standalone (the suite's server, A) vs a 3-master Redis
// Cluster with one replica each (B), started for the step with the tests'
// store/redistest on free ports of this machine. Both servers share the
// database; runs alternate A, B, A, B, A, B.

// redisCluster starts the cluster and a server on it and runs the comparison.
func (s *suite) redisCluster(ctx context.Context, name string) (SuiteEntry, error) {
	jsonPath, htmlPath, e := s.files(name)
	e.Kind = "compare"
	dir, err := os.MkdirTemp("", "nexo-bench-cluster-")
	if err != nil {
		return e, err
	}
	defer os.RemoveAll(dir)
	startCtx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	cluster, stop, err := redistest.StartCluster(startCtx, dir)
	cancel()
	if err != nil {
		return e, fmt.Errorf("start a Redis Cluster (needs redis-server and redis-cli): %w", err)
	}
	defer stop()
	so := s.so
	so.FreshDB = false // the suite's server uses the database already
	so.RedisMode, so.RedisAddrs = configs.RedisCluster, strings.Join(cluster.Seeds(), ",")
	so.Env = nil // the same streams.shards (8) as A: like for like
	onCluster, err := startInProcess(ctx, so, s.log)
	if err != nil {
		return e, fmt.Errorf("start the server on the Redis Cluster: %w", err)
	}
	defer onCluster.Close()

	c, err := s.compareAt5k(ctx, name, onCluster, "", nil)
	if err != nil {
		return e, err
	}
	c.A.Mode, c.B.Mode = "redis standalone", fmt.Sprintf("redis cluster, 3 masters + 3 replicas (%s)", strings.Join(cluster.Seeds(), ","))
	writeCompare(s.stdout, c)
	e.OK = c.A.Median["failures"]+c.B.Median["failures"] == 0
	return e, writeOutputs(jsonPath, htmlPath, c, name, compareText(c), compareChart(c))
}
