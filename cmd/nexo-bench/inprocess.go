package main

// This is the one file of nexo-bench that imports the server: it starts
// Nexo in this process for --inprocess and `make bench`. Everything else
// speaks the public protocol only.

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/cloudwego/hertz/pkg/common/hlog"
	"github.com/go-sql-driver/mysql"
	"github.com/redis/go-redis/v9"

	"github.com/nexo-im/nexo/cmd/app"
	"github.com/nexo-im/nexo/configs"
	"github.com/nexo-im/nexo/gateway"
	"github.com/nexo-im/nexo/store"
)

// inProcessServer is a Nexo the bench runs itself. It satisfies modeSwitch.
type inProcessServer struct {
	app    *app.App
	url    string
	prefix string
	// ownsKeys: Close deletes the prefix's keys. False for an instance of
	// the cluster step, whose instances share one prefix: the step deletes
	// the keys once the last instance has stopped (deleteKeys).
	ownsKeys bool
	redis    configs.Redis
	shards   int    // streams.shards
	bus      string // cluster.bus
	cancel   context.CancelFunc
	done     chan error

	mu   sync.Mutex
	base configs.TwoPhase // the switches as configured (--mode applied)
}

// benchEnv is the server configuration the bench needs, as NEXO_ variables:
// a fresh Redis key prefix per process so runs never share state, cheap
// bcrypt (the bench logs in thousands of sessions; login cost is not what
// it measures), no per-user rate limit (the bench sends faster than a
// person), an ephemeral port, a metrics.token the bench scrapes /metrics
// with.
func benchEnv(so serverOptions, prefix string) []string {
	secret := make([]byte, 32)
	_, _ = rand.Read(secret)
	return []string{
		"NEXO_MYSQL_DSN=" + so.MySQLDSN,
		"NEXO_REDIS_MODE=" + so.redisMode(),
		"NEXO_REDIS_ADDR=" + so.redisAddr(),
		"NEXO_REDIS_ADDRS=" + so.RedisAddrs,
		"NEXO_REDIS_MASTER_NAME=" + so.RedisMaster,
		"NEXO_REDIS_KEY_PREFIX=" + prefix,
		"NEXO_HTTP_ADDR=127.0.0.1:0",
		"NEXO_AUTH_BCRYPT_COST=4",
		"NEXO_JWT_SECRET=" + hex.EncodeToString(secret),
		"NEXO_WS_RATE_LIMIT=0",
		// The bench registers and logs in thousands of users from one IP,
		// each on up to ten platforms (connect: one login per session).
		"NEXO_LIMITS_LOGIN_IP_RATE=0",
		"NEXO_LIMITS_LOGIN_ACCOUNT_RATE=0",
		"NEXO_LIMITS_REGISTER_IP_RATE=0",
		// --search-probe searches every 20 ms per probed message.
		"NEXO_LIMITS_SEARCH_RATE=0",
		"NEXO_HTTP_MAX_CONNS_PER_IP=0",
		"NEXO_LOG_LEVEL=warn",
		"NEXO_METRICS_TOKEN=" + benchMetricsToken, // read by the bench's scrapes (api.metricsToken)
		"NEXO_STREAMS_CONSUMER_NAME=nexo-bench",
		// Uploads on (--picture-share): the local backend in a directory of
		// its own per server, removed by Close; every sender uploads at setup.
		"NEXO_OBJECTS_BACKEND=local",
		"NEXO_OBJECTS_LOCAL_SHARED=true",
		"NEXO_OBJECTS_LOCAL_DIR=" + objectsDir(prefix),
		"NEXO_OBJECTS_UPLOAD_RATE=0",
	}
}

// objectsDir is the local object directory of the in-process server with
// Redis key prefix prefix.
func objectsDir(prefix string) string { return filepath.Join(os.TempDir(), prefix+"-objects") }

// startInProcess prepares the database, starts Nexo and waits until
// /readyz answers. Server configuration: benchEnv, then any NEXO_ variable
// of the environment (except the two that --mysql-dsn and --redis-addr
// own), so every server key can still be changed.
func startInProcess(ctx context.Context, so serverOptions, logw io.Writer) (*inProcessServer, error) {
	if err := prepareDatabase(ctx, so.MySQLDSN, so.FreshDB); err != nil {
		return nil, err
	}
	prefix, owns := so.KeyPrefix, false
	if prefix == "" {
		b := make([]byte, 4)
		_, _ = rand.Read(b)
		prefix, owns = "nexobench-"+hex.EncodeToString(b), true
	}
	environ := benchEnv(so, prefix)
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(name, "NEXO_") && !strings.HasPrefix(name, "NEXO_TEST_") &&
			name != "NEXO_MYSQL_DSN" && name != "NEXO_REDIS_ADDR" {
			environ = append(environ, kv)
		}
	}
	environ = append(environ, so.Env...)
	cfg, err := configs.Load("", environ)
	if err != nil {
		return nil, fmt.Errorf("in-process config: %w", err)
	}
	logger := slog.New(slog.NewTextHandler(logw, &slog.HandlerOptions{Level: slog.LevelWarn}))
	// Hertz's logger is process-wide; set it before any server exists, as
	// cmd/nexo does, so its info lines follow log.level.
	hlog.SetLogger(gateway.HertzLogger(logger))
	a, err := app.New(ctx, cfg, logger)
	if err != nil {
		return nil, fmt.Errorf("start in-process nexo: %w", err)
	}
	rctx, cancel := context.WithCancel(context.Background())
	s := &inProcessServer{app: a, url: "http://" + a.Addr(), prefix: prefix, ownsKeys: owns, redis: cfg.Redis,
		shards: cfg.Streams.Shards, bus: cfg.Cluster.Bus, cancel: cancel, done: make(chan error, 1), base: a.Mode().Get()}
	go func() { s.done <- a.Run(rctx) }()
	if err := s.waitReady(ctx); err != nil {
		s.Close()
		return nil, err
	}
	if so.Mode != "" {
		tp, err := applyMode(s.base, so.Mode)
		if err != nil {
			s.Close()
			return nil, err
		}
		s.base = tp
		a.Mode().Set(tp)
	}
	return s, nil
}

// prepareDatabase creates the DSN's database, or with fresh drops and
// recreates it; fresh is refused for a database not named nexo_bench*.
func prepareDatabase(ctx context.Context, dsn string, fresh bool) error {
	c, err := mysql.ParseDSN(dsn)
	if err != nil {
		return fmt.Errorf("--mysql-dsn: %w", err)
	}
	name := c.DBName
	if name == "" || strings.ContainsAny(name, "`") {
		return fmt.Errorf("--mysql-dsn must name a database")
	}
	if fresh && !strings.HasPrefix(name, "nexo_bench") {
		return fmt.Errorf("--fresh-db drops the database: refused for %q (only nexo_bench*)", name)
	}
	c.DBName = ""
	db, err := sql.Open("mysql", c.FormatDSN())
	if err != nil {
		return err
	}
	defer db.Close()
	if fresh {
		if _, err := db.ExecContext(ctx, "DROP DATABASE IF EXISTS `"+name+"`"); err != nil {
			return fmt.Errorf("drop database %s: %w", name, err)
		}
	}
	if _, err := db.ExecContext(ctx, "CREATE DATABASE IF NOT EXISTS `"+name+"` CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci"); err != nil {
		return fmt.Errorf("create database %s (is MariaDB running? --mysql-dsn): %w", name, err)
	}
	// A server refuses a database bound to another redis.key_prefix
	// (docs/operations.md, "One database, one key prefix"). The bench
	// knowingly gives each of its servers a fresh prefix on this one
	// database, each with users of its own, so it lets go of the binding
	// before each start (the table is missing before the first).
	_, err = db.ExecContext(ctx, "UPDATE `"+name+"`.deployment SET key_prefix = ''")
	var me *mysql.MySQLError
	if err != nil && !(errors.As(err, &me) && me.Number == 1146) {
		return fmt.Errorf("release database %s from its key prefix: %w", name, err)
	}
	return nil
}

func (s *inProcessServer) waitReady(ctx context.Context) error {
	deadline := time.Now().Add(20 * time.Second)
	for {
		req, _ := http.NewRequestWithContext(ctx, "GET", s.url+"/readyz", nil)
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case err := <-s.done:
			return fmt.Errorf("in-process nexo stopped: %w", err)
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("in-process nexo at %s not ready after 20 s", s.url)
		}
	}
}

// URL is the server's base URL.
func (s *inProcessServer) URL() string { return s.url }

// SetMode implements modeSwitch: spec is "key=value,..." over the
// configured switches (two_phase.enabled, two_phase.deliver_before_saved,
// two_phase.fail_open); "" restores them. Messages in flight finish on the
// path they were accepted on (their route is in their stream entry).
func (s *inProcessServer) SetMode(spec string) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	tp, err := applyMode(s.base, spec)
	if err != nil {
		return "", err
	}
	s.app.Mode().Set(tp)
	return describeMode(tp), nil
}

func applyMode(tp configs.TwoPhase, spec string) (configs.TwoPhase, error) {
	for _, kv := range strings.Split(spec, ",") {
		kv = strings.TrimSpace(kv)
		if kv == "" {
			continue
		}
		k, v, _ := strings.Cut(kv, "=")
		on, err := strconv.ParseBool(strings.NewReplacer("on", "true", "off", "false").Replace(v))
		if err != nil {
			return tp, usageError{fmt.Errorf("mode %q: value must be true/false/on/off", kv)}
		}
		switch strings.TrimPrefix(k, "two_phase.") {
		case "enabled":
			tp.Enabled = on
		case "deliver_before_saved":
			tp.DeliverBeforeSaved = on
		case "fail_open":
			tp.FailOpen = on
		default:
			return tp, usageError{fmt.Errorf("mode %q: keys are two_phase.enabled, two_phase.deliver_before_saved, two_phase.fail_open", kv)}
		}
	}
	return tp, nil
}

func describeMode(tp configs.TwoPhase) string {
	onOff := func(b bool) string {
		if b {
			return "on"
		}
		return "off"
	}
	return "two_phase=" + onOff(tp.Enabled) + " deliver_before_saved=" + onOff(tp.DeliverBeforeSaved)
}

// Close stops the server (it drains its pipeline) and, unless its key
// prefix is shared (serverOptions.KeyPrefix), deletes its Redis keys. The
// database keeps the bench's rows; --fresh-db clears it next time.
func (s *inProcessServer) Close() error {
	s.cancel()
	err := <-s.done
	s.done <- err // a second Close returns at once
	if !s.ownsKeys {
		return err
	}
	_ = os.RemoveAll(objectsDir(s.prefix))
	return errors.Join(err, s.deleteKeys())
}

// ownedShards returns the stream shards this instance runs now (its shard
// leases; docs/pipeline.md, shard ownership).
func (s *inProcessServer) ownedShards(ctx context.Context) ([]int, error) {
	sj, err := s.app.Shards(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]int, 0, len(sj.Owned))
	for _, o := range sj.Owned {
		out = append(out, o.Shard)
	}
	return out, nil
}

// deleteKeys deletes every Redis key under the server's prefix. Run it
// only when no instance on that prefix is running any more.
func (s *inProcessServer) deleteKeys() error {
	rdb, err := store.NewRedisClient(s.redis, nil)
	if err != nil {
		return err
	}
	defer rdb.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return store.ForEachMaster(ctx, rdb, func(ctx context.Context, node redis.UniversalClient) error {
		iter := node.Scan(ctx, 0, s.prefix+":*", 1000).Iterator()
		for iter.Next(ctx) {
			node.Unlink(ctx, iter.Val()) // one key per call: a cluster refuses keys of several slots
		}
		return iter.Err()
	})
}

// redisMode is --redis-mode, standalone when unset (options built in code).
func (so serverOptions) redisMode() string {
	if so.RedisMode == "" {
		return configs.RedisStandalone
	}
	return so.RedisMode
}

// redisAddr is --redis-addr for standalone, empty otherwise (cluster and
// sentinel take --redis-addrs).
func (so serverOptions) redisAddr() string {
	if so.redisMode() != configs.RedisStandalone {
		return ""
	}
	return so.RedisAddr
}
