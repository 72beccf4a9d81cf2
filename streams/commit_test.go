package streams_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/nexo-im/nexo/store/storetest"
	"github.com/nexo-im/nexo/streams"
)

// TestCommitMarksOnlyRecordsThatStillExist: a stage commit marks an
// idempotency record saved, pointing it at the original for a late
// duplicate, and keeps its TTL; a record that has expired is not
// recreated (it would live forever without a TTL).
func TestCommitMarksOnlyRecordsThatStillExist(t *testing.T) {
	rdb, prefix := storetest.Redis(t)
	keys := streams.NewKeys(prefix, 4)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	const shard = 1
	plain := keys.Idem(shard, "alice", "c1")
	dup := keys.Idem(shard, "alice", "c2")
	gone := keys.Idem(shard, "alice", "c3")
	for _, k := range []string{plain, dup} { // as the accept step writes them
		if err := rdb.HSet(ctx, k, "id", "srv-"+k, "seq", "7", "at", "1700000000000", "saved", "0").Err(); err != nil {
			t.Fatal(err)
		}
		if err := rdb.PExpire(ctx, k, time.Hour).Err(); err != nil {
			t.Fatal(err)
		}
	}
	in := keys.ToSave(shard)
	c := streams.Commit{Input: in, Group: streams.GroupSave, MarkSaved: []streams.IdemSaved{
		{Key: plain},
		{Key: dup, ServerMsgID: "srv-original", Seq: 3, SendAt: 1600000000000},
		{Key: gone},
	}}
	if err := c.Apply(ctx, rdb); err != nil {
		t.Fatal(err)
	}
	for k, want := range map[string][]any{
		plain: {"srv-" + plain, "7", "1700000000000", "1"},
		dup:   {"srv-original", "3", "1600000000000", "1"},
	} {
		got, err := rdb.HMGet(ctx, k, "id", "seq", "at", "saved").Result()
		if err != nil {
			t.Fatal(err)
		}
		for i := range want {
			if got[i] != want[i] {
				t.Errorf("%s: fields %v, want %v", k, got, want)
				break
			}
		}
		if ttl, err := rdb.PTTL(ctx, k).Result(); err != nil || ttl <= 0 {
			t.Errorf("%s: TTL %v (%v), want the accept's", k, ttl, err)
		}
	}
	if n, err := rdb.Exists(ctx, gone).Result(); err != nil || n != 0 {
		t.Fatalf("an expired record was recreated: exists=%d, %v", n, err)
	}
}

// readBatch is one entry of shard's to_save read into the save group, as a
// save stage reads it, and its seq's in-flight mark (seq 1 of si_a_b), as
// the accept step leaves them: what a save commit settles.
type readBatch struct {
	rdb    redis.UniversalClient
	prefix string
	in, id string // the stream and the entry's ID
	pend   string // the in-flight key
}

func newReadBatch(ctx context.Context, t *testing.T, shard int) readBatch {
	t.Helper()
	rdb, prefix := storetest.Redis(t)
	keys := streams.NewKeys(prefix, 4)
	b := readBatch{rdb: rdb, prefix: prefix, in: keys.ToSave(shard), pend: keys.InFlight(shard, "si_a_b")}
	if err := streams.EnsureGroup(ctx, rdb, b.in, streams.GroupSave); err != nil {
		t.Fatal(err)
	}
	if err := rdb.XAdd(ctx, &redis.XAddArgs{Stream: b.in, Values: []any{"seq", "1"}}).Err(); err != nil {
		t.Fatal(err)
	}
	res, err := rdb.XReadGroup(ctx, &redis.XReadGroupArgs{Group: streams.GroupSave, Consumer: "c1",
		Streams: []string{b.in, ">"}, Count: 1, Block: -1}).Result()
	if err != nil || len(res) != 1 || len(res[0].Messages) != 1 {
		t.Fatalf("read the entry: %v, %v", res, err)
	}
	b.id = res[0].Messages[0].ID
	if err := rdb.ZAdd(ctx, b.pend, redis.Z{Score: 1, Member: "1"}).Err(); err != nil {
		t.Fatal(err)
	}
	return b
}

// commit is the save commit of the batch with appends.
func (b readBatch) commit(appends ...streams.Append) streams.Commit {
	return streams.Commit{Input: b.in, Group: streams.GroupSave, Ack: []string{b.id},
		Settle: []streams.Settled{{Key: b.pend, Seq: 1}}, Appends: appends}
}

// left is how many of the batch's entries are still pending and how many
// in-flight marks are left.
func (b readBatch) left(ctx context.Context, t *testing.T) (pending, marks int64) {
	t.Helper()
	p, err := b.rdb.XPending(ctx, b.in, streams.GroupSave).Result()
	if err != nil {
		t.Fatal(err)
	}
	n, err := b.rdb.ZCard(ctx, b.pend).Result()
	if err != nil {
		t.Fatal(err)
	}
	return p.Count, n
}

// TestCommitAddsAppendsWithItsAck: a commit's Appends (later stages'
// queues) are added in the step that acknowledges the batch and settles
// its seqs, each with its fields, in order.
func TestCommitAddsAppendsWithItsAck(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	b := newReadBatch(ctx, t, 2)
	search, push := b.prefix+":{search}:index", b.prefix+":{push}:saved"
	c := b.commit(
		streams.Append{Stream: search, Values: []any{"doc", []byte(`{"s":1}`)}},
		streams.Append{Stream: push, Values: []any{"msg", "m1"}},
		streams.Append{Stream: search, Values: []any{"doc", `{"s":2}`}})
	if err := c.Apply(ctx, b.rdb); err != nil {
		t.Fatal(err)
	}
	if pending, marks := b.left(ctx, t); pending != 0 || marks != 0 {
		t.Fatalf("after the commit: %d entries pending, %d in-flight marks left; want none", pending, marks)
	}
	got, err := b.rdb.XRange(ctx, search, "-", "+").Result()
	if err != nil || len(got) != 2 || got[0].Values["doc"] != `{"s":1}` || got[1].Values["doc"] != `{"s":2}` {
		t.Fatalf("search queue holds %v (%v), want the two docs in order", got, err)
	}
	if got, err := b.rdb.XRange(ctx, push, "-", "+").Result(); err != nil || len(got) != 1 || got[0].Values["msg"] != "m1" {
		t.Fatalf("push queue holds %v (%v), want m1", got, err)
	}
}

// TestCommitWithAFailingAppendAcksNothing: an append that Redis refuses
// (here a key of another type) fails the commit before its ack and its
// settling: the batch stays pending and is retried, so a later stage never
// misses a message whose batch was acknowledged.
func TestCommitWithAFailingAppendAcksNothing(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	b := newReadBatch(ctx, t, 3)
	notAStream := b.prefix + ":{search}:index"
	if err := b.rdb.Set(ctx, notAStream, "x", 0).Err(); err != nil {
		t.Fatal(err)
	}
	c := b.commit(streams.Append{Stream: notAStream, Values: []any{"doc", "d"}})
	if err := c.Apply(ctx, b.rdb); err == nil || !strings.Contains(err.Error(), "WRONGTYPE") {
		t.Fatalf("commit with a refused append: %v, want WRONGTYPE", err)
	}
	if pending, marks := b.left(ctx, t); pending != 1 || marks != 1 {
		t.Fatalf("after a failed commit: %d entries pending, %d in-flight marks left; want the batch's 1 and 1", pending, marks)
	}
}
