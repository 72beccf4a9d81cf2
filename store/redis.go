package store

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/nexo-im/nexo/configs"
)

// OpenRedis builds the client of cfg.Mode and pings every master: a plain
// client for standalone (cfg.Addr, or the one cfg.Addrs entry), a
// ClusterClient for cluster (cfg.Addrs are seed nodes; the slot map is
// discovered from them), a FailoverClient for sentinel (cfg.Addrs are the
// sentinels, cfg.MasterName the master). The caller owns the client and
// closes it. Errors name the mode and addresses; a failed ping closes the
// client before returning.
//
// m (may be nil) receives per-server errors, redirects and reconnects.
func OpenRedis(ctx context.Context, cfg configs.Redis, m *RedisMetrics) (redis.UniversalClient, error) {
	rdb, err := NewRedisClient(cfg, m)
	if err != nil {
		return nil, err
	}
	if err := PingRedis(ctx, rdb); err != nil {
		_ = rdb.Close()
		return nil, fmt.Errorf("ping redis (%s %s): %w", cfg.Mode, strings.Join(cfg.Addresses(), ","), err)
	}
	return rdb, nil
}

// The buffers of each Redis connection. go-redis gives every pooled
// connection a 32 KiB reader and a 32 KiB writer, and its pipeline pool's
// connections 128 KiB each: at a 50-pair closed loop about 70 connections
// (the accepts in flight and the blocking stage readers) held 9 MB of the
// 36 MB live heap, twice that in RSS with the collector's headroom. Nexo's
// commands and replies are small (an accept or a stream entry is a few
// hundred bytes), a bulk reply larger than the reader is read straight
// into its own slice, and only a command larger than the writer takes
// more than one write, so smaller buffers cost a few more system calls on
// the largest batches only (docs/bench/README.md, "Memory at a closed
// loop").
const (
	redisBufferSize         = 8 << 10
	redisPipelineBufferSize = 32 << 10
)

// NewRedisClient builds the client of cfg.Mode without connecting (see
// OpenRedis). The only error is an unreadable redis.tls.ca_file.
func NewRedisClient(cfg configs.Redis, m *RedisMetrics) (redis.UniversalClient, error) {
	tlsCfg, err := redisTLS(cfg.TLS)
	if err != nil {
		return nil, err
	}
	addrs := cfg.Addresses()
	switch cfg.Mode {
	case configs.RedisCluster:
		var cc *redis.ClusterClient
		// A node that stops answering is usually a master that died: reload
		// the slot map at once (at most every 100 ms) instead of waiting for
		// go-redis's periodic refresh, so the promoted replica is used as
		// soon as the cluster names it.
		reload := throttle(100*time.Millisecond, func() { cc.ReloadState(context.Background()) })
		cc = redis.NewClusterClient(&redis.ClusterOptions{
			Addrs: addrs, Username: cfg.Username, Password: cfg.Password,
			PoolSize: cfg.PoolSize, TLSConfig: tlsCfg,
			ReadBufferSize: redisBufferSize, WriteBufferSize: redisBufferSize,
			PipelineReadBufferSize: redisPipelineBufferSize, PipelineWriteBufferSize: redisPipelineBufferSize,
			NewClient: func(opt *redis.Options) *redis.Client {
				c := redis.NewClient(opt)
				c.AddHook(nodeHook{m: m, addr: opt.Addr, reload: reload})
				return c
			},
		})
		return cc, nil
	case configs.RedisSentinel:
		c := redis.NewFailoverClient(&redis.FailoverOptions{
			MasterName: cfg.MasterName, SentinelAddrs: addrs, SentinelPassword: cfg.SentinelPassword,
			Username: cfg.Username, Password: cfg.Password, DB: cfg.DB,
			PoolSize: cfg.PoolSize, TLSConfig: tlsCfg,
			ReadBufferSize: redisBufferSize, WriteBufferSize: redisBufferSize,
			PipelineReadBufferSize: redisPipelineBufferSize, PipelineWriteBufferSize: redisPipelineBufferSize,
		})
		c.AddHook(nodeHook{m: m}) // the master's address is learnt at each dial
		return c, nil
	default:
		addr := ""
		if len(addrs) > 0 {
			addr = addrs[0]
		}
		c := redis.NewClient(&redis.Options{
			Addr: addr, Username: cfg.Username, Password: cfg.Password, DB: cfg.DB,
			PoolSize: cfg.PoolSize, TLSConfig: tlsCfg,
			ReadBufferSize: redisBufferSize, WriteBufferSize: redisBufferSize,
			PipelineReadBufferSize: redisPipelineBufferSize, PipelineWriteBufferSize: redisPipelineBufferSize,
		})
		c.AddHook(nodeHook{m: m, addr: addr})
		return c, nil
	}
}

// PingRedis pings every master: each master of a Redis Cluster (so
// /readyz fails while any slot range has no reachable master), the one
// server otherwise.
func PingRedis(ctx context.Context, rdb redis.UniversalClient) error {
	cc, ok := rdb.(*redis.ClusterClient)
	if !ok {
		return rdb.Ping(ctx).Err()
	}
	if err := cc.ForEachMaster(ctx, func(ctx context.Context, node *redis.Client) error {
		if err := node.Ping(ctx).Err(); err != nil {
			return fmt.Errorf("master %s: %w", node.Options().Addr, err)
		}
		return nil
	}); err != nil {
		return err
	}
	// A master may answer while the cluster refuses commands (a slot range
	// without a master after a failed failover): ask the cluster itself.
	info, err := cc.ClusterInfo(ctx).Result()
	if err != nil {
		return err
	}
	if !strings.Contains(info, "cluster_state:ok") {
		return fmt.Errorf("redis cluster state is not ok")
	}
	return nil
}

// ForEachMaster runs fn on every master: each master node of a Redis
// Cluster, or the client itself (standalone, sentinel). Scans and other
// whole-keyspace work go through it, because a cluster client's SCAN only
// reaches one node. On a cluster fn runs concurrently, one goroutine per
// master: what it shares must be safe for that.
func ForEachMaster(ctx context.Context, rdb redis.UniversalClient, fn func(ctx context.Context, node redis.UniversalClient) error) error {
	if cc, ok := rdb.(*redis.ClusterClient); ok {
		return cc.ForEachMaster(ctx, func(ctx context.Context, node *redis.Client) error { return fn(ctx, node) })
	}
	return fn(ctx, rdb)
}

// Masters counts the masters: the cluster's masters, 1 otherwise.
func Masters(ctx context.Context, rdb redis.UniversalClient) (int, error) {
	var n atomic.Int64
	err := ForEachMaster(ctx, rdb, func(context.Context, redis.UniversalClient) error { n.Add(1); return nil })
	return int(n.Load()), err
}

func redisTLS(cfg configs.RedisTLS) (*tls.Config, error) {
	if !cfg.Enabled {
		return nil, nil
	}
	tc := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: cfg.ServerName}
	if cfg.CAFile != "" {
		pem, err := os.ReadFile(cfg.CAFile)
		if err != nil {
			return nil, fmt.Errorf("redis.tls.ca_file: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("redis.tls.ca_file %s: no PEM certificate in it", cfg.CAFile)
		}
		tc.RootCAs = pool
	}
	return tc, nil
}

// StartEmbeddedRedis starts the in-process Redis-compatible server of the
// embedded default (miniredis) on 127.0.0.1 with a free port, and returns its
// address and a stop function. Everything it holds lives in memory and is
// lost when stop runs or the process exits.
//
// miniredis only expires keys when told to, and telling it (FastForward)
// walks and sorts every key under its one lock. Its ClockTTL mode does that
// on every command, so the cost of a command grew with the number of keys
// (one idempotency record per message): the embedded server served about
// 160 msg/s at one full core, falling as keys accumulated. Instead a ticker
// advances TTLs, at least embeddedTTLTick apart and at most
// embeddedTTLMaxTick, and ttlDutyCycle times as long as the last walk took:
// the walk costs about 1 ms per 1,000 keys (0.1 s at 120,000), so with many
// keys the walks cost at most 1/ttlDutyCycle of a core and stall commands
// as rarely, and keys expire up to embeddedTTLMaxTick late (tokens,
// presence and leases have TTLs of seconds or more; one process holds the
// leases, so a late expiry hands nothing over).
func StartEmbeddedRedis() (addr string, stop func(), err error) {
	m, err := miniredis.Run()
	if err != nil {
		return "", nil, fmt.Errorf("start embedded redis: %w", err)
	}
	done := make(chan struct{})
	ticked := make(chan struct{})
	go func() {
		defer close(ticked)
		t := time.NewTimer(embeddedTTLTick)
		defer t.Stop()
		last := time.Now()
		for {
			select {
			case <-done:
				return
			case now := <-t.C:
				m.FastForward(now.Sub(last))
				last = now
				t.Reset(nextTTLTick(time.Since(now)))
			}
		}
	}()
	var once sync.Once
	return m.Addr(), func() { once.Do(func() { close(done); <-ticked; m.Close() }) }, nil
}

// The embedded Redis's TTL ticker (see StartEmbeddedRedis).
const (
	embeddedTTLTick    = 250 * time.Millisecond
	embeddedTTLMaxTick = 10 * time.Second
	ttlDutyCycle       = 100
)

// nextTTLTick is the wait before the next TTL walk after one that took
// took.
func nextTTLTick(took time.Duration) time.Duration {
	return min(max(embeddedTTLTick, ttlDutyCycle*took), embeddedTTLMaxTick)
}

// Keys builds Redis key names under a configurable prefix (redis.key_prefix),
// so several deployments or tests can share one Redis: every name starts
// with "{Prefix}:". The zero value is not useful: set Prefix.
type Keys struct {
	Prefix string
}

// Key joins parts with ':' under the prefix: Key("a", "b") is "{prefix}:a:b".
// Use it for keys that the named methods below do not cover.
func (k Keys) Key(parts ...string) string {
	return k.Prefix + ":" + strings.Join(parts, ":")
}

// Token is "{prefix}:token:{user_id}:{platform_id}": the jti of the active
// token of a user on one platform (see Tokens).
func (k Keys) Token(userID string, platformID int) string {
	return k.Key("token", userID, strconv.Itoa(platformID))
}

// Online is "{prefix}:online:{user_id}": the set of instances holding a
// connection of the user that the previous release kept for routing.
// Presence.InstancesOf still reads it during an upgrade; nothing writes it.
func (k Keys) Online(userID string) string { return k.Key("online", userID) }

// OnlineConns is "{prefix}:online:conns:{user_id}": the user's live
// connections across gateway instances.
func (k Keys) OnlineConns(userID string) string { return k.Key("online", "conns", userID) }

// User is "{prefix}:user:{user_id}": a cached user profile.
func (k Keys) User(userID string) string { return k.Key("user", userID) }

// GroupMembers is "{prefix}:group:members:{group_id}": a cached member list,
// deleted on every membership change.
func (k Keys) GroupMembers(groupID string) string { return k.Key("group", "members", groupID) }

// SeqConv is "{prefix}:seq:conv:{conversation_id}", a conversation's seq
// counter outside the pipeline's shards. Keys that one Lua script touches together must share a hash
// tag on Redis Cluster, so the pipeline may name its counters differently.
func (k Keys) SeqConv(conversationID string) string { return k.Key("seq", "conv", conversationID) }
