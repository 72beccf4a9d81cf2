package streams

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/nexo-im/nexo/store/storetest"
)

// TestCheckShardCount: raising streams.shards is recorded at once; lowering
// it is refused while a dropped shard holds an entry a stage has not
// acknowledged (unread or pending), and recorded once both are done.
func TestCheckShardCount(t *testing.T) {
	ctx := context.Background()
	rdb, prefix := storetest.Redis(t)
	k8, k4 := NewKeys(prefix, 8), NewKeys(prefix, 4)
	if err := CheckShardCount(ctx, rdb, k4); err != nil {
		t.Fatalf("first start: %v", err)
	}
	if err := CheckShardCount(ctx, rdb, k8); err != nil {
		t.Fatalf("raising to 8: %v", err)
	}
	if got := rdb.Get(ctx, k8.ShardCount()).Val(); got != "8" {
		t.Fatalf("recorded %q, want 8", got)
	}
	// Shard 6 gets an entry its save group has not read; its deliver
	// stream exists with a group and nothing in it.
	for _, sg := range [][2]string{{k8.ToSave(6), GroupSave}, {k8.ToDeliver(6), GroupDeliver}} {
		if err := EnsureGroup(ctx, rdb, sg[0], sg[1]); err != nil {
			t.Fatal(err)
		}
	}
	id := rdb.XAdd(ctx, &redis.XAddArgs{Stream: k8.ToSave(6), Values: []any{"m", "x"}}).Val()

	lowered := func() error { return CheckShardCount(ctx, rdb, k4) }
	if err := lowered(); !errors.Is(err, ErrShardsInUse) || !strings.Contains(err.Error(), k8.ToSave(6)+": 1") {
		t.Fatalf("lowering with an unread entry: %v", err)
	}
	// Read but not acknowledged: still refused.
	if err := rdb.XReadGroup(ctx, &redis.XReadGroupArgs{Group: GroupSave, Consumer: "c", Streams: []string{k8.ToSave(6), ">"}, Count: 1}).Err(); err != nil {
		t.Fatal(err)
	}
	if err := lowered(); !errors.Is(err, ErrShardsInUse) {
		t.Fatalf("lowering with a pending entry: %v", err)
	}
	if got := rdb.Get(ctx, k8.ShardCount()).Val(); got != "8" {
		t.Fatalf("a refused start recorded %q", got)
	}
	rdb.XAck(ctx, k8.ToSave(6), GroupSave, id)
	if err := lowered(); err != nil {
		t.Fatalf("lowering once shard 6 is done: %v", err)
	}
	if got := rdb.Get(ctx, k8.ShardCount()).Val(); got != "4" {
		t.Fatalf("recorded %q, want 4", got)
	}
}
