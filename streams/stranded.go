package streams

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/redis/go-redis/v9"
)

// streamGroup is a stage's stream on one shard and the consumer group that
// reads it.
type streamGroup struct{ stream, group string }

// stageGroups returns the save and deliver stages' stream and group on
// shard, in that order, under k's names.
func (k Keys) stageGroups(shard int) []streamGroup {
	return []streamGroup{{k.ToSave(shard), k.SaveGroup()}, {k.ToDeliver(shard), k.DeliverGroup()}}
}

// guardChange is the one way a start changes a recorded setting that
// decides which streams the stages read (streams.shards, streams.names).
// left are the streams and groups the change stops reading; while any
// holds an unfinished entry no consumer would ever take it again, so the
// change is refused with refuse(busy), busy joining describe(sg, n) of each
// such stream in order. Otherwise record stores the new setting.
func guardChange(ctx context.Context, rdb redis.UniversalClient, left []streamGroup,
	describe func(sg streamGroup, n int64) string, refuse func(busy string) error, record func() error) error {
	var busy []string
	for _, sg := range left {
		n, err := unfinished(ctx, rdb, sg.stream, sg.group)
		if err != nil {
			return err
		}
		if n > 0 {
			busy = append(busy, describe(sg, n))
		}
	}
	if len(busy) > 0 {
		return refuse(strings.Join(busy, ", "))
	}
	return record()
}

// recordedShards returns the streams.shards the last start recorded
// (Keys.ShardCount), 0 when none did.
func recordedShards(ctx context.Context, rdb redis.UniversalClient, keys Keys) (int, error) {
	s, err := rdb.Get(ctx, keys.ShardCount()).Result()
	if err != nil && !errors.Is(err, redis.Nil) {
		return 0, fmt.Errorf("read the recorded shard count: %w", err)
	}
	n, _ := strconv.Atoi(s)
	return n, nil
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
