package sync_test

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/nexo-im/nexo/domain"
	"github.com/nexo-im/nexo/gateway/ws"
	"github.com/nexo-im/nexo/services/chat"
	"github.com/nexo-im/nexo/streams"
	"github.com/nexo-im/nexo/workers"
)

// saveOnly runs the save stage on the to_save entries of conv whose seqs
// are listed — what another consumer saving the shard out of order does.
func (e *env) saveOnly(conv string, seqs ...int64) {
	e.t.Helper()
	shard := e.skeys.Shard(conv)
	xs, err := e.rdb.XRange(bg, e.skeys.ToSave(shard), "-", "+").Result()
	if err != nil {
		e.t.Fatal(err)
	}
	var batch []redis.XMessage
	for _, x := range xs {
		en, err := streams.Decode(x)
		if err == nil && en.Msg.ConversationID == conv && slices.Contains(seqs, en.Msg.Seq) {
			batch = append(batch, x)
		}
	}
	if len(batch) != len(seqs) {
		e.t.Fatalf("found %d of the entries %v", len(batch), seqs)
	}
	// The entries must be pending for the group for XACK to count; a read
	// by another consumer name is what a second instance would have done.
	if err := streams.EnsureGroup(bg, e.rdb, e.skeys.ToSave(shard), streams.GroupSave); err != nil {
		e.t.Fatal(err)
	}
	save := workers.NewSaveHandler(workers.SaveDeps{Keys: e.skeys, Redis: e.rdb, Messages: e.msgs, Seqs: e.seqs,
		Allocator: e.accepter, Pusher: chat.NewPusher(ws.NewPushes(e.reg, quiet)), Metrics: workers.NewMetrics(nil), Log: quiet})
	if err := save.Handle(bg, shard, batch); err != nil {
		e.t.Fatal(err)
	}
}

func statuses(res chat.PullResult) string {
	out := ""
	for _, m := range res.Messages {
		out += fmt.Sprintf("%d:%s ", m.Seq, m.Status)
	}
	return out + fmt.Sprint("pending=", res.PendingSeqs)
}

// TestPullNeverCallsAnInFlightSeqAHole: with seqs saved out of order (two
// consumers on one shard, or a retried batch), max_seq runs ahead of the
// saved prefix. A pull stops before a seq that is still in flight and names
// it in pending_seqs; only seqs gone for good (here a retired lease) are
// placeholders. Real MariaDB and Redis.
func TestPullNeverCallsAnInFlightSeqAHole(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOpts{mode: saveFirst, noStages: true})
	e.addUsers("alice", "bob")
	conv := domain.SingleConversationID("alice", "bob")
	for i := 1; i <= 5; i++ {
		if s := e.send("alice", "bob"); s != int64(i) {
			t.Fatalf("seq %d, want %d", s, i)
		}
	}
	if err := e.accepter.Retire(bg, conv, 7); err != nil { // 6 and 7 are never issued
		t.Fatal(err)
	}
	if s := e.send("alice", "bob"); s != 8 {
		t.Fatalf("seq after the retired block = %d", s)
	}
	e.saveOnly(conv, 4, 5, 8)

	cases := []struct {
		name string
		req  chat.PullRequest
		want string
	}{
		{"from the start", chat.PullRequest{ConversationID: conv, BeginSeq: 1}, "pending=[1 2 3]"},
		{"from a saved seq", chat.PullRequest{ConversationID: conv, BeginSeq: 4}, "4:normal 5:normal 6:unavailable 7:unavailable 8:normal pending=[]"},
		{"newest page", chat.PullRequest{ConversationID: conv}, "4:normal 5:normal 6:unavailable 7:unavailable 8:normal pending=[1 2 3]"},
		{"load earlier", chat.PullRequest{ConversationID: conv, EndSeq: 7, Limit: 5}, "4:normal 5:normal 6:unavailable 7:unavailable pending=[3]"},
	}
	for _, c := range cases {
		res, err := e.puller.Pull(bg, "bob", c.req)
		if err != nil {
			t.Fatal(err)
		}
		if got := statuses(res); got != c.want || res.MaxSeq != 8 {
			t.Errorf("%s: %s (max_seq %d), want %s (8)", c.name, got, res.MaxSeq, c.want)
		}
	}
	res, err := e.puller.PullBySeqs(bg, "bob", conv, []int64{2, 4, 6, 9})
	if err != nil {
		t.Fatal(err)
	}
	// 9 is above everything issued and not in flight: a placeholder, as before.
	if got := statuses(res); got != "4:normal 6:unavailable 9:unavailable pending=[2]" {
		t.Errorf("pull by seqs: %s", got)
	}

	// Once the stage saves the rest, the whole range reads settled.
	e.startStages()
	deadline := time.Now().Add(10 * time.Second)
	for {
		res, err := e.puller.Pull(bg, "bob", chat.PullRequest{ConversationID: conv, BeginSeq: 1})
		if err != nil {
			t.Fatal(err)
		}
		want := "1:normal 2:normal 3:normal 4:normal 5:normal 6:unavailable 7:unavailable 8:normal pending=[]"
		if got := statuses(res); got == want {
			break
		} else if time.Now().After(deadline) {
			t.Fatalf("after the save: %s", got)
		}
		time.Sleep(5 * time.Millisecond) // polling with a deadline, not synchronisation
	}
}

// TestPullAfterRedisLossCallsLostSeqsGone: when Redis loses its data, the
// in-flight marks go with the stream entries they stand for, so a seq
// accepted but never saved — and the rest of the lease Redis held — read as
// unavailable for good, and new seqs continue above them.
func TestPullAfterRedisLossCallsLostSeqsGone(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOpts{mode: saveFirst, noStages: true})
	e.addUsers("alice", "bob")
	conv := domain.SingleConversationID("alice", "bob")
	e.send("alice", "bob")
	e.send("alice", "bob")
	e.saveOnly(conv, 2)
	res, _ := e.puller.Pull(bg, "bob", chat.PullRequest{ConversationID: conv, BeginSeq: 1})
	if got := statuses(res); got != "pending=[1]" {
		t.Fatalf("before the loss: %s", got)
	}
	// Redis loses everything of this test's prefix.
	keys, err := e.rdb.Keys(bg, e.keys.Prefix+":*").Result()
	if err != nil {
		t.Fatal(err)
	}
	if err := e.rdb.Del(bg, keys...).Err(); err != nil {
		t.Fatal(err)
	}
	e.startStages()
	next := e.send("alice", "bob")
	if next <= 100 {
		t.Fatalf("seq after the loss = %d, want above the leased block", next)
	}
	e.waitSaved(conv, next)
	res, err = e.puller.Pull(bg, "bob", chat.PullRequest{ConversationID: conv, BeginSeq: 1})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Messages) != 100 || res.Messages[0].Status != "unavailable" || res.Messages[1].Status != "normal" ||
		res.Messages[99].Status != "unavailable" || len(res.PendingSeqs) != 0 {
		t.Fatalf("after the loss: %s", statuses(res))
	}
}

// TestSyncPathSettlesItsSeq: the synchronous path marks its seq in flight
// while the request saves and settles it after the commit.
func TestSyncPathSettlesItsSeq(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOpts{mode: syncMode})
	e.addUsers("alice", "bob")
	conv := domain.SingleConversationID("alice", "bob")
	e.send("alice", "bob")
	seqs, err := streams.NewInFlightReader(e.rdb, e.skeys).InFlight(bg, conv)
	if err != nil || len(seqs) != 0 {
		t.Fatalf("in flight after a synchronous save: %v %v", seqs, err)
	}
}
