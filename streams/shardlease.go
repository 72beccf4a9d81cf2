package streams

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

// ShardLeases are the per-shard ownership leases: the save and deliver
// stages of shard N run only on the instance holding nexo:{sN}:owner, and
// every stage commit of the shard checks the lease's fencing token inside
// commit.lua (Commit.Fence), so a paused or partitioned old owner can never
// acknowledge or forward an entry after the lease moved on. A token comes
// from INCR on nexo:{sN}:epoch, so it grows — unless a Redis failover loses
// the last increments, when a new owner can be handed a token an old one
// still holds. So what every check compares is the lease's fence, the
// token qualified by the holding process's run (a random ID per
// ShardLeases): a repeated token never matches another process's fence.
// Both keys carry the shard's hash tag: every script here is Redis Cluster
// safe.
type ShardLeases struct {
	rdb  redis.UniversalClient
	keys Keys
	run  string
}

// NewShardLeases returns the leases of keys' shards, held by this process.
func NewShardLeases(rdb redis.UniversalClient, keys Keys) *ShardLeases {
	b := make([]byte, 8)
	_, _ = rand.Read(b) // crypto/rand never fails on Linux
	return &ShardLeases{rdb: rdb, keys: keys, run: hex.EncodeToString(b)}
}

// acquireScript: KEYS owner, epoch; ARGV holder, ttl ms, now ms, run. Free
// (or expired, or held under the same holder name by an earlier run of
// this instance): a new token, and the fence "token:run". Held by another
// holder: 0.
var acquireScript = redis.NewScript(`
local h = redis.call('HGET', KEYS[1], 'holder')
if h and h ~= ARGV[1] then return 0 end
local t = redis.call('INCR', KEYS[2])
redis.call('HSET', KEYS[1], 'holder', ARGV[1], 'token', t, 'fence', t .. ':' .. ARGV[4], 'at', ARGV[3])
redis.call('PEXPIRE', KEYS[1], ARGV[2])
return t
`)

// renewScript: KEYS owner; ARGV fence, ttl ms. 1 renewed, 0 lost.
var renewScript = redis.NewScript(`
if redis.call('HGET', KEYS[1], 'fence') == ARGV[1] then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  return 1
end
return 0
`)

// releaseScript: KEYS owner; ARGV fence. Deletes the lease only if it is
// still ours.
var releaseScript = redis.NewScript(`
if redis.call('HGET', KEYS[1], 'fence') == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
`)

// fence is the value the lease's fence field holds for token in this run.
func (l *ShardLeases) fence(token int64) string { return strconv.FormatInt(token, 10) + ":" + l.run }

// Acquire takes shard's lease for holder (an instance ID) for ttl. It
// returns the fencing token, or 0 when another holder has it. Acquiring a
// lease the same holder name still holds (a restart of the instance)
// issues a new token, which fences out the earlier run.
func (l *ShardLeases) Acquire(ctx context.Context, shard int, holder string, ttl time.Duration) (int64, error) {
	t, err := acquireScript.Run(ctx, l.rdb, []string{l.keys.Owner(shard), l.keys.Epoch(shard)},
		holder, ttl.Milliseconds(), time.Now().UnixMilli(), l.run).Int64()
	if err != nil {
		return 0, classify(fmt.Sprintf("acquire shard %d", shard), err)
	}
	return t, nil
}

// Renew extends the lease held with token by ttl; false when it is no
// longer held with that token (it expired and may have moved on).
func (l *ShardLeases) Renew(ctx context.Context, shard int, token int64, ttl time.Duration) (bool, error) {
	n, err := renewScript.Run(ctx, l.rdb, []string{l.keys.Owner(shard)}, l.fence(token), ttl.Milliseconds()).Int64()
	if err != nil {
		return false, classify(fmt.Sprintf("renew shard %d", shard), err)
	}
	return n == 1, nil
}

// Release gives the lease back at once if it is still held with token, so
// the next owner need not wait for it to expire.
func (l *ShardLeases) Release(ctx context.Context, shard int, token int64) error {
	return classify(fmt.Sprintf("release shard %d", shard),
		releaseScript.Run(ctx, l.rdb, []string{l.keys.Owner(shard)}, l.fence(token)).Err())
}

// RenewMany renews several leases in one round trip (a pipeline; on Redis
// Cluster go-redis splits it by slot): tokens maps shard to token. The
// answer maps each shard to whether it is still held.
func (l *ShardLeases) RenewMany(ctx context.Context, tokens map[int]int64, ttl time.Duration) (map[int]bool, error) {
	pipe := l.rdb.Pipeline()
	cmds := make(map[int]*redis.Cmd, len(tokens))
	for shard, token := range tokens {
		cmds[shard] = renewScript.Eval(ctx, pipe, []string{l.keys.Owner(shard)}, l.fence(token), ttl.Milliseconds())
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return nil, classify("renew shard leases", err)
	}
	out := make(map[int]bool, len(cmds))
	for shard, c := range cmds {
		n, _ := c.Int64()
		out[shard] = n == 1
	}
	return out, nil
}

// AcquireMany tries to acquire several leases in one round trip; the
// answer maps each shard to its new token, 0 when another holder has it.
func (l *ShardLeases) AcquireMany(ctx context.Context, shards []int, holder string, ttl time.Duration) (map[int]int64, error) {
	pipe := l.rdb.Pipeline()
	cmds := make(map[int]*redis.Cmd, len(shards))
	now := time.Now().UnixMilli()
	for _, shard := range shards {
		cmds[shard] = acquireScript.Eval(ctx, pipe, []string{l.keys.Owner(shard), l.keys.Epoch(shard)}, holder, ttl.Milliseconds(), now, l.run)
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return nil, classify("acquire shard leases", err)
	}
	out := make(map[int]int64, len(cmds))
	for shard, c := range cmds {
		out[shard], _ = c.Int64()
	}
	return out, nil
}

// Fence is the fence a commit of shard carries for token.
func (l *ShardLeases) Fence(shard int, token int64) *Fence {
	return &Fence{Key: l.keys.Owner(shard), Token: token, Value: l.fence(token)}
}

// ShardOwner is one shard's lease as Redis holds it (GET /admin/cluster).
type ShardOwner struct {
	Shard     int    `json:"shard"`
	Holder    string `json:"holder"`     // instance ID; "" when free
	Token     int64  `json:"token"`      // fencing token
	Since     int64  `json:"since"`      // Unix ms the lease was taken
	ExpiresIn int64  `json:"expires_in"` // ms left unless renewed
}

// Owners reads every shard's lease (one round trip per shard: the keys
// live in different slots on Redis Cluster).
func (l *ShardLeases) Owners(ctx context.Context) ([]ShardOwner, error) {
	out := make([]ShardOwner, 0, l.keys.Shards())
	for shard := 0; shard < l.keys.Shards(); shard++ {
		key := l.keys.Owner(shard)
		v, err := l.rdb.HMGet(ctx, key, "holder", "token", "at").Result()
		if err != nil {
			return nil, classify("read shard owners", err)
		}
		o := ShardOwner{Shard: shard}
		if s, ok := v[0].(string); ok {
			o.Holder = s
			o.Token, _ = strconv.ParseInt(fmt.Sprint(v[1]), 10, 64)
			o.Since, _ = strconv.ParseInt(fmt.Sprint(v[2]), 10, 64)
			if ttl, err := l.rdb.PTTL(ctx, key).Result(); err == nil && ttl > 0 {
				o.ExpiresIn = ttl.Milliseconds()
			}
		}
		out = append(out, o)
	}
	return out, nil
}

// delConsumerScript removes a consumer from a group only while it has no
// pending entries (KEYS stream; ARGV group, consumer), so no entry is ever
// dropped from the pending list: a consumer that reads again is recreated
// and its entries are reclaimed like any other.
var delConsumerScript = redis.NewScript(`
local p = redis.call('XPENDING', KEYS[1], ARGV[1], '-', '+', 1, ARGV[2])
if #p > 0 then return -1 end
return redis.call('XGROUP', 'DELCONSUMER', KEYS[1], ARGV[1], ARGV[2])
`)

// PruneConsumers removes from group on stream every consumer that dead
// reports dead and that has no pending entries left (they are reclaimed
// first by the shard's owner). It returns the names removed.
func PruneConsumers(ctx context.Context, rdb redis.UniversalClient, stream, group string, dead func(name string) bool) ([]string, error) {
	cs, err := rdb.XInfoConsumers(ctx, stream, group).Result()
	if err != nil {
		return nil, classify("list consumers of "+stream, err)
	}
	var removed []string
	for _, c := range cs {
		if !dead(c.Name) || c.Pending > 0 {
			continue
		}
		n, err := delConsumerScript.Run(ctx, rdb, []string{stream}, group, c.Name).Int64()
		if err != nil && !errors.Is(err, redis.Nil) {
			return removed, classify("remove consumer "+c.Name, err)
		}
		if n >= 0 {
			removed = append(removed, c.Name)
		}
	}
	return removed, nil
}
