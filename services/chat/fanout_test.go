package chat

import (
	"context"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/nexo-im/nexo/domain"
)

// seqRecorder is the Connections that records the seq of every 2001 it
// pushes, per conversation, and is slow on odd seqs so that a second
// worker would overtake.
type seqRecorder struct {
	mu   sync.Mutex
	seqs map[string][]int64
	n    int
}

func (r *seqRecorder) PushToUser(ctx context.Context, userID string, p domain.Push, exceptConn string) int {
	return r.PushToUsers(ctx, []string{userID}, p, exceptConn)
}

func (r *seqRecorder) PushToUsers(_ context.Context, _ []string, p domain.Push, _ string) int {
	m := p.Data.(MessageJSON)
	if m.Seq%2 == 1 {
		time.Sleep(100 * time.Microsecond) // makes overtaking likely; not synchronisation
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.seqs[m.ConversationID] = append(r.seqs[m.ConversationID], m.Seq)
	r.n++
	return 1
}

func (r *seqRecorder) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.n
}

// With several workers, one conversation's pushes still leave in the order
// they were queued (the bench saw receivers' reorders with two-phase off
// when any worker could take any push).
func TestAsyncFanoutKeepsConversationOrder(t *testing.T) {
	rec := &seqRecorder{seqs: map[string][]int64{}}
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	// Every lane can hold every push: this test is about order, and with a
	// random lane seed three of the four conversations can share a lane.
	const lanes = 8
	a := NewAsyncFanout(lanes*4*200, lanes, NewPusher(rec), nil, nil, nil, quiet)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { _ = a.Run(ctx); close(done) }()
	defer func() { cancel(); <-done }()

	const convs, perConv = 4, 200
	for seq := int64(1); seq <= perConv; seq++ {
		for c := 0; c < convs; c++ {
			id := string(rune('a'+c)) + "_x"
			a.Deliver(&domain.Message{ServerMsgID: "m", ConversationID: "si_" + id, Seq: seq, SenderID: "s", RecvID: "r",
				SessionType: domain.SessionSingle, MsgType: domain.MsgText, Content: domain.Content{Text: "t"}}, "")
		}
	}
	deadline := time.Now().Add(20 * time.Second)
	for rec.count() < convs*perConv {
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d pushes", rec.count(), convs*perConv)
		}
		time.Sleep(time.Millisecond)
	}
	for conv, seqs := range rec.seqs {
		for i, s := range seqs {
			if s != int64(i+1) {
				t.Fatalf("%s: push %d carried seq %d (order %v...)", conv, i, s, seqs[:min(i+3, len(seqs))])
			}
		}
	}
}

// A lane queues up to its bound and Deliver beyond it drops and counts;
// what was queued comes out in order, and a drained lane gives its
// storage back (domain.Queue).
func TestAsyncFanoutQueueBoundAndStorage(t *testing.T) {
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	a := NewAsyncFanout(1000, 1, NewPusher(&seqRecorder{seqs: map[string][]int64{}}), nil, nil, nil, quiet)
	lane := a.lanes[0]
	m := func(seq int64) *domain.Message {
		return &domain.Message{ConversationID: "si_a_b", Seq: seq, SenderID: "a", RecvID: "b", SessionType: domain.SessionSingle}
	}
	for seq := range int64(1005) {
		a.Deliver(m(seq), "")
	}
	if got := testutil.ToFloat64(a.dropped); got != 5 {
		t.Fatalf("dropped %v over a bound of 1000, want 5", got)
	}
	peak := lane.Cap()
	for want := int64(0); want < 1000; want++ {
		j, ok := lane.Take()
		if !ok || j.m.Seq != want {
			t.Fatalf("took seq %v (%v) where %d was due", j.m, ok, want)
		}
	}
	if c := lane.Cap(); c >= peak {
		t.Fatalf("a drained lane keeps %d slots (peak %d)", c, peak)
	}
}
