package streams

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/redis/go-redis/v9"

	"github.com/nexo-im/nexo/configs"
)

// ErrNamesInUse: streams.names renamed a stream or consumer group while
// the old one still holds entries a stage has not finished; starting would
// strand them.
var ErrNamesInUse = errors.New("streams.names changed while the old streams hold unfinished entries")

// NamesKey is the key recording the streams.names the deployment last
// started with: a hash of to_save, to_deliver, dead, save_group and
// deliver_group (no hash tag: it is a key of its own). Absent, the
// deployment used configs.DefaultStreamNames, as every one did before the
// names were configurable.
func (k Keys) NamesKey() string { return k.prefix + ":streams:names" }

// CheckNames compares streams.names with the names recorded by the last
// start and records the new ones when it is safe, as CheckShardCount does
// for the shard count; run it first, so that check reads the streams under
// the names in use.
//
// A rename is refused with ErrNamesInUse, naming the old and new names and
// the busy streams, while a renamed stage's old stream holds an entry its
// old group has not acknowledged (read or not) on any shard the last start
// or this one has: no consumer would ever read it again. The operator lets
// the old names drain in a quiet window (nexo_stream_pending at 0), then
// renames. The old dead-letter stream is left as it is, for operators.
//
// A renamed group on a stream that keeps its name starts where the old
// group stopped, so the entries it acknowledged and that are not trimmed
// yet are not handled twice. docs/pipeline.md, "Changing streams.names".
func CheckNames(ctx context.Context, rdb redis.UniversalClient, keys Keys) error {
	rec, err := rdb.HGetAll(ctx, keys.NamesKey()).Result()
	if err != nil {
		return fmt.Errorf("read the recorded stream names: %w", err)
	}
	prev := NewKeys(keys.prefix, keys.shards).WithNames(configs.StreamNames{ToSave: rec[nameToSave], ToDeliver: rec[nameToDeliver],
		Dead: rec[nameDead], SaveGroup: rec[nameSaveGroup], DeliverGroup: rec[nameDeliverGroup]})
	if prev.names == keys.names {
		if len(rec) == 0 {
			return recordNames(ctx, rdb, keys)
		}
		return nil
	}
	recorded, err := recordedShards(ctx, rdb, keys)
	if err != nil {
		return err
	}
	var left []streamGroup  // old streams and groups no stage reads any more
	var moved []streamGroup // new groups on streams that keep their name
	for shard := range max(keys.Shards(), recorded) {
		olds, curs := prev.stageGroups(shard), keys.stageGroups(shard)
		for i, old := range olds {
			if old == curs[i] {
				continue
			}
			left = append(left, old)
			if old.stream == curs[i].stream {
				moved = append(moved, curs[i])
			}
		}
	}
	return guardChange(ctx, rdb, left,
		func(sg streamGroup, n int64) string { return fmt.Sprintf("%s (group %s): %d", sg.stream, sg.group, n) },
		func(busy string) error {
			return fmt.Errorf("%w: streams.names was %s and is now %s, but %s; start with the old names until those streams are consumed, then rename",
				ErrNamesInUse, describeNames(prev.names), describeNames(keys.names), busy)
		},
		func() error {
			for _, p := range moved {
				// Every entry so far is acknowledged by the old group: the
				// new one starts at the stream's end. Nothing to do for a
				// stream not created yet (EnsureGroup makes it).
				err := rdb.XGroupCreate(ctx, p.stream, p.group, "$").Err()
				if err != nil && !strings.Contains(err.Error(), "BUSYGROUP") && !strings.Contains(err.Error(), "requires the key to exist") {
					return fmt.Errorf("create group %s on %s: %w", p.group, p.stream, err)
				}
			}
			return recordNames(ctx, rdb, keys)
		})
}

// Fields of the NamesKey hash, named as the streams.names keys.
const (
	nameToSave       = "to_save"
	nameToDeliver    = "to_deliver"
	nameDead         = "dead"
	nameSaveGroup    = "save_group"
	nameDeliverGroup = "deliver_group"
)

func recordNames(ctx context.Context, rdb redis.UniversalClient, keys Keys) error {
	n := keys.names
	err := rdb.HSet(ctx, keys.NamesKey(), nameToSave, n.ToSave, nameToDeliver, n.ToDeliver, nameDead, n.Dead,
		nameSaveGroup, n.SaveGroup, nameDeliverGroup, n.DeliverGroup).Err()
	if err != nil {
		return fmt.Errorf("record the stream names: %w", err)
	}
	return nil
}

// describeNames renders names as the streams.names keys, e.g.
// "to_save=to_save to_deliver=to_deliver dead=dead save_group=save
// deliver_group=deliver".
func describeNames(n configs.StreamNames) string {
	return fmt.Sprintf("%s=%s %s=%s %s=%s %s=%s %s=%s", nameToSave, n.ToSave, nameToDeliver, n.ToDeliver, nameDead, n.Dead,
		nameSaveGroup, n.SaveGroup, nameDeliverGroup, n.DeliverGroup)
}
