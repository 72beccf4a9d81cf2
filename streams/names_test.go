package streams

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/nexo-im/nexo/configs"
	"github.com/nexo-im/nexo/store/storetest"
)

// TestCheckNamesRenamesFinishedStreams: a rename over streams whose
// groups have finished everything starts and is recorded; a group renamed
// on a stream that keeps its name starts after what the old group
// acknowledged.
func TestCheckNamesRenamesFinishedStreams(t *testing.T) {
	ctx := context.Background()
	rdb, prefix := storetest.Redis(t)
	keys := NewKeys(prefix, 2)
	if err := CheckNames(ctx, rdb, keys); err != nil {
		t.Fatalf("first start: %v", err)
	}
	if got := rdb.HGet(ctx, keys.NamesKey(), "to_save").Val(); got != "to_save" {
		t.Fatalf("first start recorded to_save=%q", got)
	}
	// Shard 0 has a finished entry on each stream.
	for _, sg := range [][2]string{{keys.ToSave(0), keys.SaveGroup()}, {keys.ToDeliver(0), keys.DeliverGroup()}} {
		finishedEntry(t, rdb, sg[0], sg[1])
	}

	renamed := keys.WithNames(configs.StreamNames{ToSave: "save_in", SaveGroup: "savers"})
	if err := CheckNames(ctx, rdb, renamed); err != nil {
		t.Fatalf("renaming finished streams: %v", err)
	}
	rec := rdb.HGetAll(ctx, keys.NamesKey()).Val()
	if rec["to_save"] != "save_in" || rec["save_group"] != "savers" || rec["to_deliver"] != "to_deliver" {
		t.Fatalf("recorded %v", rec)
	}

	regrouped := renamed.WithNames(configs.StreamNames{DeliverGroup: "deliverers"})
	if err := CheckNames(ctx, rdb, regrouped); err != nil {
		t.Fatalf("renaming a finished group: %v", err)
	}
	if err := EnsureGroup(ctx, rdb, regrouped.ToDeliver(0), "deliverers"); err != nil {
		t.Fatal(err)
	}
	res, err := rdb.XReadGroup(ctx, &redis.XReadGroupArgs{Group: "deliverers", Consumer: "c",
		Streams: []string{regrouped.ToDeliver(0), ">"}, Count: 10, Block: -1}).Result()
	if err != nil && !errors.Is(err, redis.Nil) {
		t.Fatal(err)
	}
	if len(res) > 0 && len(res[0].Messages) > 0 {
		t.Fatalf("the renamed group re-read %d entries the old one acknowledged", len(res[0].Messages))
	}
}

// TestCheckNamesRefusesToStrandEntries: a rename is refused, naming the
// old and new names and the busy stream, while an old stream holds an
// entry its group has read but not acknowledged, or not read; a
// deployment with no names recorded used the defaults.
func TestCheckNamesRefusesToStrandEntries(t *testing.T) {
	ctx := context.Background()
	rdb, prefix := storetest.Redis(t)
	keys := NewKeys(prefix, 2)
	if err := EnsureGroup(ctx, rdb, keys.ToSave(1), keys.SaveGroup()); err != nil {
		t.Fatal(err)
	}
	id := rdb.XAdd(ctx, &redis.XAddArgs{Stream: keys.ToSave(1), Values: []any{"m", "x"}}).Val()
	if err := rdb.XReadGroup(ctx, &redis.XReadGroupArgs{Group: keys.SaveGroup(), Consumer: "c",
		Streams: []string{keys.ToSave(1), ">"}, Count: 1, Block: -1}).Err(); err != nil {
		t.Fatal(err)
	}

	renamed := keys.WithNames(configs.StreamNames{ToSave: "save_in"})
	err := CheckNames(ctx, rdb, renamed)
	if !errors.Is(err, ErrNamesInUse) {
		t.Fatalf("renaming over a pending entry: %v", err)
	}
	for _, want := range []string{"was to_save=to_save ", "now to_save=save_in ", keys.ToSave(1) + " (group save): 1"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q: %v", want, err)
		}
	}
	if n := rdb.Exists(ctx, keys.NamesKey()).Val(); n != 0 {
		t.Fatal("a refused start recorded the names")
	}

	// Unread: an entry on to_deliver with no group yet; a group rename.
	rdb.XAdd(ctx, &redis.XAddArgs{Stream: keys.ToDeliver(0), Values: []any{"m", "y"}})
	rdb.XAck(ctx, keys.ToSave(1), keys.SaveGroup(), id)
	err = CheckNames(ctx, rdb, keys.WithNames(configs.StreamNames{DeliverGroup: "deliverers"}))
	if !errors.Is(err, ErrNamesInUse) || !strings.Contains(err.Error(), keys.ToDeliver(0)+" (group deliver): 1") {
		t.Fatalf("renaming a group over an unread entry: %v", err)
	}
	// The save rename alone is safe now that its entry is acknowledged.
	if err := CheckNames(ctx, rdb, renamed); err != nil {
		t.Fatalf("renaming once to_save is done: %v", err)
	}
}

// finishedEntry appends an entry to stream and has group read and
// acknowledge it.
func finishedEntry(t *testing.T, rdb redis.UniversalClient, stream, group string) {
	t.Helper()
	ctx := context.Background()
	if err := EnsureGroup(ctx, rdb, stream, group); err != nil {
		t.Fatal(err)
	}
	id := rdb.XAdd(ctx, &redis.XAddArgs{Stream: stream, Values: []any{"m", "x"}}).Val()
	if err := rdb.XReadGroup(ctx, &redis.XReadGroupArgs{Group: group, Consumer: "c", Streams: []string{stream, ">"}, Count: 1, Block: -1}).Err(); err != nil {
		t.Fatal(err)
	}
	if err := rdb.XAck(ctx, stream, group, id).Err(); err != nil {
		t.Fatal(err)
	}
}
