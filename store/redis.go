package store

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/nexo-im/nexo/configs"
)

// OpenRedis connects to the Redis at cfg.Addr and pings it. The caller owns
// the client and closes it. Errors name the address; a failed ping closes the
// client before returning.
func OpenRedis(ctx context.Context, cfg configs.Redis) (redis.UniversalClient, error) {
	rdb := redis.NewClient(&redis.Options{
		Addr:     cfg.Addr,
		Password: cfg.Password,
		DB:       cfg.DB,
		PoolSize: cfg.PoolSize,
	})
	if err := rdb.Ping(ctx).Err(); err != nil {
		_ = rdb.Close()
		return nil, fmt.Errorf("ping redis %s: %w", cfg.Addr, err)
	}
	return rdb, nil
}

// StartEmbeddedRedis starts the in-process Redis-compatible server of the
// embedded default (miniredis) on 127.0.0.1 with a free port, and returns its
// address and a stop function. Everything it holds lives in memory and is
// lost when stop runs or the process exits.
//
// miniredis only expires keys when told to; ClockTTL makes TTLs follow the
// wall clock, as a real Redis does, so token and presence keys expire.
func StartEmbeddedRedis() (addr string, stop func(), err error) {
	m, err := miniredis.Run()
	if err != nil {
		return "", nil, fmt.Errorf("start embedded redis: %w", err)
	}
	m.ClockTTL(true)
	return m.Addr(), m.Close, nil
}

// Keys builds Redis key names under a configurable prefix (redis.key_prefix),
// so several deployments or tests can share one Redis. Names follow the seed
// design §3.8 with "{Prefix}:" in front. The zero value is not useful: set
// Prefix.
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

// Online is "{prefix}:online:{user_id}": set while the user has a live
// WebSocket session (TTL ws.presence_ttl, refreshed by heartbeats).
func (k Keys) Online(userID string) string { return k.Key("online", userID) }

// OnlineConns is "{prefix}:online:conns:{user_id}": the user's live
// connections across gateway instances.
func (k Keys) OnlineConns(userID string) string { return k.Key("online", "conns", userID) }

// User is "{prefix}:user:{user_id}": a cached user profile.
func (k Keys) User(userID string) string { return k.Key("user", userID) }

// GroupMembers is "{prefix}:group:members:{group_id}": a cached member list,
// deleted on every membership change.
func (k Keys) GroupMembers(groupID string) string { return k.Key("group", "members", groupID) }

// SeqConv is "{prefix}:seq:conv:{conversation_id}", the seed design's seq
// counter name. Keys that one Lua script touches together must share a hash
// tag on Redis Cluster, so the pipeline may name its counters differently.
func (k Keys) SeqConv(conversationID string) string { return k.Key("seq", "conv", conversationID) }
