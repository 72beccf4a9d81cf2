package streams

import (
	"context"
	"errors"
	"fmt"

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
	recorded, err := recordedShards(ctx, rdb, keys)
	if err != nil {
		return err
	}
	var dropped []streamGroup
	for shard := keys.Shards(); shard < recorded; shard++ {
		dropped = append(dropped, keys.stageGroups(shard)...)
	}
	return guardChange(ctx, rdb, dropped,
		func(sg streamGroup, n int64) string { return fmt.Sprintf("%s: %d", sg.stream, n) },
		func(busy string) error {
			return fmt.Errorf("%w: streams.shards was %d and is now %d, but %s; start with streams.shards %d until those streams are consumed, then lower it",
				ErrShardsInUse, recorded, keys.Shards(), busy, recorded)
		},
		func() error {
			if recorded == keys.Shards() {
				return nil
			}
			if err := rdb.Set(ctx, keys.ShardCount(), keys.Shards(), 0).Err(); err != nil {
				return fmt.Errorf("record the shard count: %w", err)
			}
			return nil
		})
}
