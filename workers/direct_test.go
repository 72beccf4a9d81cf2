package workers_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/nexo-im/nexo/domain"
	"github.com/nexo-im/nexo/streams"
)

// TestSavedMessagesSkipToDeliver: once a shard's deliver stage has caught
// up, the save stage pushes saved messages itself: later messages never
// enter to_deliver, and pushes still leave in seq order.
func TestSavedMessagesSkipToDeliver(t *testing.T) {
	e := newEnv(t, nil)
	stop := e.start("n1")
	defer stop()
	first := e.send("alice", "bob", "m0", streams.SaveFirst)
	e.rec.waitFor(t, "the first push", 10*time.Second, func() bool { return len(e.rec.pushes["bob"]) == 1 })
	const n = 30
	for i := 1; i < n; i++ {
		e.send("alice", "bob", fmt.Sprint("m", i), streams.SaveFirst)
		// One at a time, so each is a batch of its own after the first.
		e.rec.waitFor(t, "its ACK(saved)", 10*time.Second, func() bool { return len(e.rec.saved) == i+1 })
	}
	e.rec.waitFor(t, "every push", 10*time.Second, func() bool { return len(e.rec.pushes["bob"]) >= n })
	e.rec.mu.Lock()
	pushes := append([]int64(nil), e.rec.pushes["bob"]...)
	e.rec.mu.Unlock()
	for i, s := range pushes {
		if s != int64(i+1) {
			t.Fatalf("pushes out of order or repeated: %v", pushes)
		}
	}
	// The first message of a shard started here goes through the stream
	// (another instance may have left entries there); none after it.
	if l := e.rdb.XLen(context.Background(), e.keys.ToDeliver(first.Shard)).Val(); l != 1 {
		t.Fatalf("to_deliver holds %d entries, want only the first", l)
	}
	if got := testutil.ToFloat64(e.metrics.DirectDeliveries); got != n-1 {
		t.Fatalf("nexo_deliver_direct_total = %v, want %d", got, n-1)
	}
}

// flakyFanout records group pushes, fails the first fail[seq] pushes of a
// seq and holds a push of a seq in gate until its channel is closed.
type flakyFanout struct {
	mu     sync.Mutex
	fail   map[int64]int
	gate   map[int64]chan struct{}
	pushed []int64
	failed int
}

func (f *flakyFanout) FanoutGroup(ctx context.Context, m *domain.Message, _ string) error {
	f.mu.Lock()
	if f.fail[m.Seq] > 0 {
		f.fail[m.Seq]--
		f.failed++
		f.mu.Unlock()
		return errors.New("member cache down")
	}
	gate := f.gate[m.Seq]
	f.mu.Unlock()
	if gate != nil {
		select {
		case <-gate:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	f.mu.Lock()
	f.pushed = append(f.pushed, m.Seq)
	f.mu.Unlock()
	return nil
}

func (f *flakyFanout) seqs() []int64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]int64(nil), f.pushed...)
}

// TestFailedDirectPushKeepsOrder: a push that fails in the save stage goes
// to the deliver stage, and the messages after it follow it there until it
// has gone through, so one conversation's pushes never overtake each other;
// then the save stage pushes directly again.
func TestFailedDirectPushKeepsOrder(t *testing.T) {
	e := newEnv(t, nil)
	// Seq 5 fails in the save stage and its retry in the deliver stage is
	// held until seq 6 is saved, which must then wait for it; seq 9 fails
	// once in the save stage, once in the deliver stage.
	release := make(chan struct{})
	fanout := &flakyFanout{fail: map[int64]int{5: 1}, gate: map[int64]chan struct{}{5: release}}
	e.groups = fanout
	stop := e.start("n1")
	defer stop()
	conv := domain.GroupConversationID("g1")
	const n = 40
	for i := 0; i < n; i++ {
		m := domain.Message{
			ServerMsgID: fmt.Sprint("srv-g-", i), ClientMsgID: fmt.Sprint("g", i), ConversationID: conv,
			SenderID: "alice", GroupID: "g1", SessionType: domain.SessionGroup, MsgType: domain.MsgText,
			Content: domain.Content{Text: "hi"}, SendAt: time.Now().UnixMilli(),
		}
		if _, err := e.acc.Accept(context.Background(), streams.AcceptRequest{Msg: m, Route: streams.SaveFirst, Append: true}); err != nil {
			t.Fatal(err)
		}
		// One at a time, so that every batch after the first is one message.
		e.rec.waitFor(t, "its ACK(saved)", 10*time.Second, func() bool { return len(e.rec.saved) == i+1 })
		if i == 5 {
			close(release)
		}
		if i == 7 {
			fanout.mu.Lock()
			fanout.fail[9] = 2 // in the save stage, then in the deliver stage
			fanout.mu.Unlock()
		}
	}
	e.rec.waitFor(t, "every push", 15*time.Second, func() bool {
		seqs := fanout.seqs()
		return len(seqs) > 0 && seqs[len(seqs)-1] == n
	})
	// A retried deliver batch pushes again what it pushed before its
	// failure (at-least-once), but no seq leaves before a smaller one.
	pushed := fanout.seqs()
	var top int64
	for _, s := range pushed {
		if s > top+1 {
			t.Fatalf("seq %d pushed before seq %d: %v", s, top+1, pushed)
		}
		top = max(top, s)
	}
	if pushed[4] != 5 || pushed[5] != 6 {
		t.Fatalf("pushes %v: seq 6 did not wait for seq 5", pushed)
	}
	if fanout.failed != 3 {
		t.Fatalf("%d pushes failed, want 3", fanout.failed)
	}
	if got := testutil.ToFloat64(e.metrics.DirectDeliveries); got == 0 {
		t.Fatal("no message was pushed by the save stage")
	}
	if got := testutil.ToFloat64(e.metrics.DeliverFailures); got != 3 {
		t.Fatalf("nexo_deliver_failures_total = %v, want 3", got)
	}
}
