package store

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

// Cluster membership (docs/cluster.md). Every Nexo process is an instance
// with an id (cluster.instance_id) that announces itself in Redis:
//
//	{prefix}:{cluster}:instance:{id}  hash {boot, epoch, addr, started_at,
//	                                  heartbeat_at, conns}, PX instance TTL
//	{prefix}:{cluster}:instances      set of ids ever registered (pruned by Live)
//
// An instance is live while its hash exists: its own heartbeat renews the
// TTL, so a crashed instance drops out one TTL after its last heartbeat,
// measured by Redis's clock (no clock agreement between hosts is needed).
// The boot token is random per process start and kept nowhere else: it is
// how a process proves that a record is its own. Both keys share the hash
// tag {cluster}, so the scripts below run unchanged on Redis Cluster.

// ErrInstanceTaken is returned by Register when another live process holds
// the instance id (its heartbeat kept renewing while Register waited).
var ErrInstanceTaken = errors.New("cluster.instance_id is held by another live instance")

// ErrInstanceLost is returned by Heartbeat when the record is gone or
// belongs to another boot: this process was presumed dead (its heartbeat
// lapsed past the TTL) and must not act as a member any more.
var ErrInstanceLost = errors.New("cluster membership lost (heartbeat lapsed or the id was taken over)")

// Instance is one member as recorded in Redis. Times are Unix milliseconds.
type Instance struct {
	// ID is cluster.instance_id.
	ID string `json:"instance_id"`
	// Boot is the random token of this process start (never shown by the
	// admin API: it proves ownership).
	Boot string `json:"-"`
	// Epoch is taken from a cluster-wide counter when a process first
	// registers: a later process start has a larger epoch (a fencing value
	// for whoever orders incarnations). A process keeps its epoch for its
	// whole life, also when it re-registers after a stall.
	Epoch int64 `json:"epoch"`
	// Addr is where the instance serves HTTP/WebSocket (informational).
	Addr string `json:"addr"`
	// StartedAt is when this incarnation registered.
	StartedAt int64 `json:"started_at"`
	// HeartbeatAt is the instance's clock at its last heartbeat.
	HeartbeatAt int64 `json:"last_heartbeat"`
	// Conns is its WebSocket connection count at the last heartbeat.
	Conns int `json:"connections"`
}

// Instances is the membership store. Safe for concurrent use.
type Instances struct {
	rdb  redis.UniversalClient
	keys Keys
	ttl  time.Duration
}

// NewInstances returns the membership store on rdb under keys.Prefix; ttl
// (cluster.instance_ttl) is how long a record outlives its last heartbeat.
func NewInstances(rdb redis.UniversalClient, keys Keys, ttl time.Duration) *Instances {
	return &Instances{rdb: rdb, keys: keys, ttl: ttl}
}

// TTL is the record TTL the store was built with.
func (s *Instances) TTL() time.Duration { return s.ttl }

func (s *Instances) setKey() string { return s.keys.Prefix + ":{cluster}:instances" }

func (s *Instances) key(id string) string { return s.keys.Prefix + ":{cluster}:instance:" + id }

// epochKey counts registrations (Instance.Epoch).
func (s *Instances) epochKey() string { return s.keys.Prefix + ":{cluster}:epoch" }

// NewBootToken returns a random token for Instance.Boot.
func NewBootToken() string {
	b := make([]byte, 12)
	_, _ = rand.Read(b) // crypto/rand.Read never fails (Go 1.24+)
	return hex.EncodeToString(b)
}

// registerScript claims KEYS[1] for boot ARGV[1] unless another boot holds
// it. The epoch is kept when the same boot re-registers (its record still
// there, or ARGV[6] > 0: the caller's own epoch after its record lapsed),
// else taken from the counter. Returns {1, epoch} on success, {0, pttl}
// when taken.
var registerScript = redis.NewScript(`
local cur = redis.call('HGET', KEYS[1], 'boot')
if cur and cur ~= ARGV[1] then
  return {0, redis.call('PTTL', KEYS[1])}
end
local epoch = tonumber(ARGV[6])
if cur then epoch = tonumber(redis.call('HGET', KEYS[1], 'epoch')) end
if not epoch or epoch <= 0 then epoch = redis.call('INCR', KEYS[3]) end
redis.call('DEL', KEYS[1])
redis.call('HSET', KEYS[1], 'boot', ARGV[1], 'epoch', epoch, 'addr', ARGV[2],
  'started_at', ARGV[3], 'heartbeat_at', ARGV[3], 'conns', 0)
redis.call('PEXPIRE', KEYS[1], ARGV[4])
redis.call('SADD', KEYS[2], ARGV[5])
return {1, epoch}
`)

// Register makes self (ID, Boot and Addr set) a live member and returns it
// with Epoch and StartedAt filled. A new process leaves Epoch 0 and gets
// a new one; the same process registering again (same Boot, e.g. after a
// stall let its record lapse) passes its Epoch and keeps it, so its
// presence entries stay valid. When another boot holds the id, Register
// waits up to wait for that record to lapse: a process restarted after a
// crash waits out its own stale heartbeat. If the record is renewed while
// waiting (its holder is alive) or is still there after wait, the answer is
// ErrInstanceTaken. Other errors are Redis failures.
func (s *Instances) Register(ctx context.Context, self Instance, wait time.Duration) (Instance, error) {
	if self.ID == "" || self.Boot == "" {
		return Instance{}, errors.New("register instance: ID and Boot are required")
	}
	deadline := time.Now().Add(wait)
	lastTTL := int64(-1)
	poll := min(s.ttl/4, 250*time.Millisecond)
	for {
		now := time.Now().UnixMilli()
		res, err := registerScript.Run(ctx, s.rdb, []string{s.key(self.ID), s.setKey(), s.epochKey()},
			self.Boot, self.Addr, now, s.ttl.Milliseconds(), self.ID, self.Epoch).Int64Slice()
		if err != nil {
			return Instance{}, fmt.Errorf("register instance %s: %w", self.ID, err)
		}
		if res[0] == 1 {
			self.Epoch, self.StartedAt, self.HeartbeatAt = res[1], now, now
			return self, nil
		}
		pttl := res[1]
		if lastTTL >= 0 && pttl > lastTTL {
			return Instance{}, fmt.Errorf("%w: %s (its heartbeat is renewing)", ErrInstanceTaken, self.ID)
		}
		lastTTL = pttl
		if time.Now().Add(poll).After(deadline) {
			return Instance{}, fmt.Errorf("%w: %s (still live after waiting %s)", ErrInstanceTaken, self.ID, wait)
		}
		select {
		case <-ctx.Done():
			return Instance{}, fmt.Errorf("register instance %s: %w", self.ID, ctx.Err())
		case <-time.After(poll):
		}
	}
}

// heartbeatScript renews KEYS[1] only while it holds boot ARGV[1], and
// re-lists it in KEYS[2] (Live may have pruned it in a race).
var heartbeatScript = redis.NewScript(`
if redis.call('HGET', KEYS[1], 'boot') ~= ARGV[1] then return 0 end
redis.call('HSET', KEYS[1], 'heartbeat_at', ARGV[2], 'conns', ARGV[3])
redis.call('PEXPIRE', KEYS[1], ARGV[4])
redis.call('SADD', KEYS[2], ARGV[5])
return 1
`)

// Heartbeat renews self's record (by ID and Boot) with the connection
// count conns. ErrInstanceLost means the record lapsed or another boot took
// the id: the caller must stop acting as a member (and may Register again).
func (s *Instances) Heartbeat(ctx context.Context, self Instance, conns int) error {
	ok, err := heartbeatScript.Run(ctx, s.rdb, []string{s.key(self.ID), s.setKey()},
		self.Boot, time.Now().UnixMilli(), conns, s.ttl.Milliseconds(), self.ID).Int()
	if err != nil {
		return fmt.Errorf("heartbeat instance %s: %w", self.ID, err)
	}
	if ok == 0 {
		return fmt.Errorf("%w: %s", ErrInstanceLost, self.ID)
	}
	return nil
}

// leaveScript deletes KEYS[1] only while it holds boot ARGV[1].
var leaveScript = redis.NewScript(`
if redis.call('HGET', KEYS[1], 'boot') == ARGV[1] then
  redis.call('DEL', KEYS[1])
  redis.call('SREM', KEYS[2], ARGV[2])
end
return 1
`)

// Leave removes self's record at once (graceful shutdown), so the others
// stop routing to it without waiting for the TTL. A record of another boot
// is left alone.
func (s *Instances) Leave(ctx context.Context, self Instance) error {
	if err := leaveScript.Run(ctx, s.rdb, []string{s.key(self.ID), s.setKey()}, self.Boot, self.ID).Err(); err != nil {
		return fmt.Errorf("leave instance %s: %w", self.ID, err)
	}
	return nil
}

// Live returns every live instance, sorted by ID, with one SMEMBERS and one
// pipelined HGETALL per known id; ids whose record lapsed are pruned from
// the set on the way.
func (s *Instances) Live(ctx context.Context) ([]Instance, error) {
	ids, err := s.rdb.SMembers(ctx, s.setKey()).Result()
	if err != nil {
		return nil, fmt.Errorf("list instances: %w", err)
	}
	if len(ids) == 0 {
		return nil, nil
	}
	cmds := make([]*redis.MapStringStringCmd, len(ids))
	_, err = s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, id := range ids {
			cmds[i] = p.HGetAll(ctx, s.key(id))
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read instances: %w", err)
	}
	out := make([]Instance, 0, len(ids))
	var gone []any
	for i, c := range cmds {
		h := c.Val()
		if len(h) == 0 || h["boot"] == "" {
			gone = append(gone, ids[i])
			continue
		}
		out = append(out, Instance{
			ID: ids[i], Boot: h["boot"], Epoch: atoi64(h["epoch"]), Addr: h["addr"],
			StartedAt: atoi64(h["started_at"]), HeartbeatAt: atoi64(h["heartbeat_at"]), Conns: int(atoi64(h["conns"])),
		})
	}
	if len(gone) > 0 {
		// Best effort: a record re-created between HGETALL and SREM is
		// re-added by its next Register (the set only speeds up listing;
		// a live instance missing from it is found again at Register).
		_ = s.rdb.SRem(ctx, s.setKey(), gone...).Err()
	}
	slices.SortFunc(out, func(a, b Instance) int {
		switch {
		case a.ID < b.ID:
			return -1
		case a.ID > b.ID:
			return 1
		}
		return 0
	})
	return out, nil
}

func atoi64(s string) int64 {
	n, _ := strconv.ParseInt(s, 10, 64)
	return n
}
