package store

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-redis/redis_rate/v10"
	"github.com/redis/go-redis/v9"

	"github.com/nexo-im/nexo/configs"
)

// DeadSenders refuses, for a while, the sends of a user whose messages keep
// ending in the dead-letter stream (docs/pipeline.md): content that passed the
// accept checks but that the database refuses every time. The save stage
// reports each dead letter (DeadLetter); limits.dead_letters.count of them
// within about limits.dead_letters.window block the sender for
// limits.dead_letters.block, on every instance.
//
// State in Redis, shared by the instances: a GCRA counter per sender
// (github.com/go-redis/redis_rate, key "rate:{prefix}:dead_letters:{user_id}")
// and one sorted set of blocked senders scored by the block's end in Unix
// ms ("{prefix}:dead_blocked"). The accept check (Blocked) is a lookup in
// this process's copy of that set, refreshed every second by Run, so it
// costs the send path no Redis call; a block takes effect on other
// instances within that second.
type DeadSenders struct {
	rdb     redis.UniversalClient
	rl      *redis_rate.Limiter
	counter string // redis_rate key prefix of the per-sender counters
	set     string // the sorted set of blocked senders
	limit   redis_rate.Limit
	block   time.Duration
	log     *slog.Logger

	mu      sync.Mutex                           // serialises writers of blocked
	blocked atomic.Pointer[map[string]time.Time] // sender -> end of block; read without a lock
}

// NewDeadSenders returns the limit for cfg (limits.dead_letters) on rdb
// with keys under keys.Prefix; nil when cfg.Count is 0 (off). Its methods
// accept a nil receiver (off).
func NewDeadSenders(rdb redis.UniversalClient, keys Keys, cfg configs.DeadLetters, log *slog.Logger) *DeadSenders {
	if cfg.Count <= 0 || cfg.Window <= 0 || cfg.Block <= 0 {
		return nil
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	d := &DeadSenders{
		rdb: rdb, rl: redis_rate.NewLimiter(rdb), counter: keys.Prefix + ":dead_letters:", set: keys.Key("dead_blocked"),
		limit: redis_rate.Limit{Rate: cfg.Count, Period: cfg.Window, Burst: cfg.Count}, block: cfg.Block, log: log,
	}
	d.blocked.Store(&map[string]time.Time{})
	return d
}

// DeadLetter counts one dead-lettered message of sender; the one that uses
// up the sender's budget (and any after it) blocks the sender for the
// block time. It reports whether the sender is now blocked.
func (d *DeadSenders) DeadLetter(ctx context.Context, sender string) (bool, error) {
	if d == nil || sender == "" {
		return false, nil
	}
	res, err := d.rl.Allow(ctx, d.counter+sender, d.limit)
	if err != nil {
		return false, fmt.Errorf("count dead letter of %s: %w", sender, err)
	}
	if res.Allowed > 0 && res.Remaining > 0 {
		return false, nil
	}
	until := time.Now().Add(d.block)
	if err := d.rdb.ZAdd(ctx, d.set, redis.Z{Score: float64(until.UnixMilli()), Member: sender}).Err(); err != nil {
		return false, fmt.Errorf("block %s: %w", sender, err)
	}
	d.mu.Lock()
	next := map[string]time.Time{}
	for k, v := range *d.blocked.Load() {
		next[k] = v
	}
	next[sender] = until
	d.blocked.Store(&next)
	d.mu.Unlock()
	return true, nil
}

// Blocked returns how long sender's sends are still refused (0: not
// blocked), from this process's copy of the blocked set.
func (d *DeadSenders) Blocked(sender string) time.Duration {
	if d == nil {
		return 0
	}
	until, ok := (*d.blocked.Load())[sender]
	if !ok {
		return 0
	}
	return max(time.Until(until), 0)
}

// Refresh drops ended blocks from Redis and reloads this process's copy of
// the blocked set.
func (d *DeadSenders) Refresh(ctx context.Context) error {
	if d == nil {
		return nil
	}
	now := strconv.FormatInt(time.Now().UnixMilli(), 10)
	if err := d.rdb.ZRemRangeByScore(ctx, d.set, "-inf", now).Err(); err != nil {
		return fmt.Errorf("expire dead-letter blocks: %w", err)
	}
	zs, err := d.rdb.ZRangeWithScores(ctx, d.set, 0, -1).Result()
	if err != nil && !errors.Is(err, redis.Nil) {
		return fmt.Errorf("read dead-letter blocks: %w", err)
	}
	next := make(map[string]time.Time, len(zs))
	for _, z := range zs {
		if s, ok := z.Member.(string); ok {
			next[s] = time.UnixMilli(int64(z.Score))
		}
	}
	d.mu.Lock()
	d.blocked.Store(&next)
	d.mu.Unlock()
	return nil
}

// deadSendersRefresh is how often Run reloads the blocked set.
const deadSendersRefresh = time.Second

// Run refreshes the blocked set every second until ctx ends. Errors are
// logged (at most one line a minute) and the last copy is kept.
func (d *DeadSenders) Run(ctx context.Context) error {
	if d == nil {
		<-ctx.Done()
		return nil
	}
	t := time.NewTicker(deadSendersRefresh)
	defer t.Stop()
	var lastLog time.Time
	for {
		if err := d.Refresh(ctx); err != nil && ctx.Err() == nil && time.Since(lastLog) > time.Minute {
			lastLog = time.Now()
			d.log.Warn("dead-letter sender blocks not refreshed", "err", err)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}
