package streams_test

import (
	"context"
	"testing"
	"time"

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
