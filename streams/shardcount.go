package streams

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/redis/go-redis/v9"
)

// ErrShardsInUse: streams.shards was lowered while a shard it drops still
// holds entries a stage has not finished; starting would strand them.
var ErrShardsInUse = errors.New("streams.shards lowered while a dropped shard holds unfinished entries")

// ShardCount is the key recording the streams.shards the deployment last
// started with (no hash tag: it is a key of its own).
func (k Keys) ShardCount() string { return k.prefix + ":streams:shards" }

// CheckShardCount compares streams.shards with the count recorded by the
// last start and records the new one when it is safe.
//
// Raising the count is safe: every old shard is still consumed, and a
// conversation that moves to another shard takes its seq from the database
// lease there (seqs keep rising). Lowering it is not while a dropped shard
// holds an entry that a stage has not acknowledged (read or not): no
// consumer would ever take it. That start is refused with ErrShardsInUse,
// naming the shards and how many entries; the operator lets the old count
// drain them in a quiet window (nexo_stream_pending), then lowers it.
// docs/pipeline.md, "Changing streams.shards".
func CheckShardCount(ctx context.Context, rdb redis.UniversalClient, keys Keys) error {
	prev, err := rdb.Get(ctx, keys.ShardCount()).Result()
	if err != nil && !errors.Is(err, redis.Nil) {
		return fmt.Errorf("read the recorded shard count: %w", err)
	}
	recorded, _ := strconv.Atoi(prev)
	var busy []string
	for shard := keys.Shards(); shard < recorded; shard++ {
		for _, sg := range [][2]string{{keys.ToSave(shard), keys.SaveGroup()}, {keys.ToDeliver(shard), keys.DeliverGroup()}} {
			n, err := unfinished(ctx, rdb, sg[0], sg[1])
			if err != nil {
				return err
			}
			if n > 0 {
				busy = append(busy, fmt.Sprintf("%s: %d", sg[0], n))
			}
		}
	}
	if len(busy) > 0 {
		return fmt.Errorf("%w: streams.shards was %d and is now %d, but %s; start with streams.shards %d until those streams are consumed, then lower it",
			ErrShardsInUse, recorded, keys.Shards(), strings.Join(busy, ", "), recorded)
	}
	if recorded != keys.Shards() {
		if err := rdb.Set(ctx, keys.ShardCount(), keys.Shards(), 0).Err(); err != nil {
			return fmt.Errorf("record the shard count: %w", err)
		}
	}
	return nil
}

// unfinished counts the entries of stream that group has not acknowledged:
// its pending entries, plus 1 if any entry lies beyond its last delivered
// ID (a lower bound: enough to refuse).
func unfinished(ctx context.Context, rdb redis.UniversalClient, stream, group string) (int64, error) {
	groups, err := rdb.XInfoGroups(ctx, stream).Result()
	if err != nil {
		if strings.Contains(err.Error(), "no such key") {
			return 0, nil
		}
		return 0, fmt.Errorf("inspect %s: %w", stream, err)
	}
	for _, g := range groups {
		if g.Name != group {
			continue
		}
		unread, err := rdb.XRangeN(ctx, stream, "("+g.LastDeliveredID, "+", 1).Result()
		if err != nil {
			return 0, fmt.Errorf("inspect %s: %w", stream, err)
		}
		return g.Pending + int64(len(unread)), nil
	}
	// No group yet: every entry is unread.
	return rdb.XLen(ctx, stream).Result()
}
