package streams

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/nexo-im/nexo/domain"
)

// The accept step's seq leases: blocks leased from the database
// (Leaser), installed into a conversation's Redis allocator, and what of
// them was never issued.

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

// Leaser leases seq blocks from the database (store.SeqRepo).
type Leaser interface {
	Lease(ctx context.Context, conversationID string, block int64) (domain.SeqLease, error)
}

// installScript installs a database lease (ARGV base, ceiling) into a
// conversation's allocator without ever moving it backwards. A block that
// starts where the current one ends (the next lease; two gateways may both
// have taken one) only extends the ceiling, so the current block's unissued
// seqs are still handed out and no gap opens. Any other block moves cur up
// to its base, because seqs between the current ceiling and that base may
// belong to someone else; installing (x, x) so retires everything up to x
// (used after seqs were issued around Redis). A stale, lower lease changes
// nothing.
//
// Fence on (ARGV[3] = '1'): an allocator last written by another server
// (field node is not this server's run_id) may have lost issued seqs with
// its old master, so its current block is retired first (cur = ceil): the
// new lease comes from the database, above every seq ever leased, and no
// seq can be issued twice. The allocator is then tagged with this server.
// Replies {stale (0/1), cur before the install}.
var installScript = redis.NewScript(`
local me = ''
if ARGV[3] == '1' then me = string.match(redis.call('INFO', 'server'), 'run_id:(%x+)') or '' end
local s = redis.call('HMGET', KEYS[1], 'cur', 'ceil', 'node')
local cur = tonumber(s[1]) or 0
local ceil = tonumber(s[2]) or 0
local was = cur
local stale = 0
if me ~= '' and s[3] and s[3] ~= me then
  stale = 1
  if cur < ceil then cur = ceil end
end
local base = tonumber(ARGV[1])
local nc = tonumber(ARGV[2])
if base == ceil and nc > ceil then
  ceil = nc
else
  if cur < base then cur = base end
  if nc > ceil then ceil = nc end
end
if cur > ceil then ceil = cur end
redis.call('HSET', KEYS[1], 'cur', string.format('%d', cur), 'ceil', string.format('%d', ceil))
if me ~= '' then redis.call('HSET', KEYS[1], 'node', me) end
return {stale, string.format('%d', was)}
`)

// refill leases a block from the database and installs it. Concurrent
// accepts of one conversation share one lease (singleflight), so a burst
// burns one block, not one per request. force skips the check that another
// refill already installed a block (the allocator was reported stale: its
// cur < ceil proves nothing).
func (a *Accepter) refill(ctx context.Context, shard int, conversationID string, force bool) error {
	key := conversationID
	if force {
		key = "stale\x00" + conversationID
	}
	_, err, _ := a.inflight.Do(key, func() (any, error) {
		// An accept that saw "lease" just before another refill of this
		// process installed a fresh block must not lease again.
		if cur, ceil, err := a.allocator(ctx, shard, conversationID); err == nil && !force && cur < ceil {
			return nil, nil
		}
		lease, err := a.leaser.Lease(ctx, conversationID, a.block)
		if err != nil {
			return nil, fmt.Errorf("lease seqs for %s: %w", conversationID, err)
		}
		return nil, a.install(ctx, shard, conversationID, lease.Base, lease.Ceiling)
	})
	return err
}

// leaseAhead leases a conversation's next block in the background once
// its current one is down to a quarter (left: seqs left after an accept),
// so that a send never waits for the database's lease on its ACK's path
// (docs/pipeline.md, "Seq"). The block installs contiguously above the
// current one (installScript); an accept that still finds the block used
// up leases on its path as before. Blocks under 4 seqs lease on the path
// only. One lease per conversation at a time in a process, ahead or on
// the path; a failure is left to the accept that finds the block used up.
func (a *Accepter) leaseAhead(ctx context.Context, shard int, conversationID string, left int64) {
	low := a.block / 4
	if low < 1 || left > low {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), leaseAheadTimeout)
	go func() {
		defer cancel()
		// refill's key: a send that finds the block used up waits for
		// this lease rather than taking a second one, whose install would
		// skip this one's block.
		_, _, _ = a.inflight.Do(conversationID, func() (any, error) {
			// Another process, or this one a moment ago, may have
			// installed the next block already.
			cur, ceil, err := a.allocator(ctx, shard, conversationID)
			if err != nil || ceil-cur > low {
				return nil, err
			}
			lease, err := a.leaser.Lease(ctx, conversationID, a.block)
			if err != nil {
				return nil, err
			}
			return nil, a.install(ctx, shard, conversationID, lease.Base, lease.Ceiling)
		})
	}()
}

// allocator reads a conversation's allocator: the last seq issued and
// the block's ceiling (0 for a missing field or hash).
func (a *Accepter) allocator(ctx context.Context, shard int, conversationID string) (cur, ceil int64, err error) {
	vals, err := a.rdb.HMGet(ctx, a.keys.Seq(shard, conversationID), "cur", "ceil").Result()
	if err != nil {
		return 0, 0, err
	}
	cur, _ = strconv.ParseInt(fmt.Sprint(vals[0]), 10, 64)
	ceil, _ = strconv.ParseInt(fmt.Sprint(vals[1]), 10, 64)
	return cur, ceil, nil
}

// leaseAheadTimeout bounds one lease taken ahead of need.
const leaseAheadTimeout = 5 * time.Second

func (a *Accepter) install(ctx context.Context, shard int, conversationID string, base, ceiling int64) error {
	fence := "0"
	if a.opt.fence {
		fence = "1"
	}
	res, err := installScript.Run(ctx, a.rdb, []string{a.keys.Seq(shard, conversationID)}, base, ceiling, fence).Slice()
	if err != nil {
		return classify("install lease", err)
	}
	if len(res) == 2 && fmt.Sprint(res[0]) == "1" {
		a.lost.staleAllocator(shard, conversationID, fmt.Sprint(res[1]), base)
	}
	return nil
}

// Retire makes the Redis allocator of conversationID continue above seq
// (next accept leases a fresh block if the current one ends below it). The
// synchronous fallback calls it for every conversation it allocated in while
// Redis was down, so seqs keep rising in issue order once Redis is back.
func (a *Accepter) Retire(ctx context.Context, conversationID string, seq int64) error {
	return a.install(ctx, a.keys.Shard(conversationID), conversationID, seq, seq)
}
