package streams

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/redis/go-redis/v9"
)

// UnusedLease is the part of a conversation's current database lease that
// Redis never handed out: seqs in (Issued, Ceiling].
type UnusedLease struct {
	ConversationID string
	Issued         int64
	Ceiling        int64
}

// UnusedLeases lists every conversation whose Redis allocator holds seqs it
// has not issued. Only a process that owns its Redis alone (the embedded
// default) may give them back, after it stopped accepting: another process
// sharing the Redis could still issue from them.
func (a *Accepter) UnusedLeases(ctx context.Context) ([]UnusedLease, error) {
	var out []UnusedLease
	for shard := 0; shard < a.keys.Shards(); shard++ {
		prefix := a.keys.Seq(shard, "")
		// A cluster client's SCAN reaches one node: scan the master of
		// the shard's slot, where all of its allocators live.
		var node redis.UniversalClient = a.rdb
		if cc, ok := a.rdb.(*redis.ClusterClient); ok {
			n, err := cc.MasterForKey(ctx, prefix)
			if err != nil {
				return nil, fmt.Errorf("master of shard %d: %w", shard, err)
			}
			node = n
		}
		iter := node.Scan(ctx, 0, prefix+"*", 1000).Iterator()
		for iter.Next(ctx) {
			key := iter.Val()
			vals, err := node.HMGet(ctx, key, "cur", "ceil").Result()
			if err != nil {
				return nil, fmt.Errorf("read allocator %s: %w", key, err)
			}
			cur, _ := strconv.ParseInt(fmt.Sprint(vals[0]), 10, 64)
			ceil, _ := strconv.ParseInt(fmt.Sprint(vals[1]), 10, 64)
			if ceil > cur {
				out = append(out, UnusedLease{ConversationID: strings.TrimPrefix(key, prefix), Issued: cur, Ceiling: ceil})
			}
		}
		if err := iter.Err(); err != nil {
			return nil, fmt.Errorf("scan allocators: %w", err)
		}
	}
	return out, nil
}
