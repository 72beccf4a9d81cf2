package chat

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"sync"
	"testing"
	"time"

	"github.com/nexo-im/nexo/domain"
)

// heldMaxSeqs answers from max; its first query waits for release after
// taking its snapshot, so the test can commit a save while it is in flight.
type heldMaxSeqs struct {
	mu      sync.Mutex
	max     map[string]int64
	calls   [][]string
	err     error
	entered chan struct{}
	release chan struct{}
}

func (h *heldMaxSeqs) MaxSeqs(_ context.Context, ids []string) (map[string]int64, error) {
	h.mu.Lock()
	h.calls = append(h.calls, ids)
	first := len(h.calls) == 1
	snap := maps.Clone(h.max)
	err := h.err
	h.mu.Unlock()
	if first && h.release != nil {
		h.entered <- struct{}{}
		<-h.release
	}
	if err != nil {
		return nil, err
	}
	out := map[string]int64{}
	for _, id := range ids {
		if v, ok := snap[id]; ok {
			out[id] = v
		}
	}
	return out, nil
}

// One batch reads each of its conversations once and answers every caller;
// a conversation with no row is 0, and a database error reaches every
// caller of the batch.
func TestMaxSeqLookupBatch(t *testing.T) {
	h := &heldMaxSeqs{max: map[string]int64{"sg_g1": 7, "si_a_b": 3}}
	l := newMaxSeqLookup(h)
	var batch []*domain.Call[string, int64]
	for _, id := range []string{"sg_g1", "si_a_b", "sg_g1", "sg_none", "sg_g1"} {
		batch = append(batch, &domain.Call[string, int64]{Req: id})
	}
	l.flush(context.Background(), batch)
	if len(h.calls) != 1 || fmt.Sprint(h.calls[0]) != "[sg_g1 si_a_b sg_none]" {
		t.Fatalf("queries %v, want one reading each conversation once", h.calls)
	}
	for i, want := range []int64{7, 3, 7, 0, 7} {
		if batch[i].Res != want || batch[i].Err != nil {
			t.Errorf("call %d (%s) = %d, %v; want %d", i, batch[i].Req, batch[i].Res, batch[i].Err, want)
		}
	}
	h.err = errors.New("db down")
	if _, err := l.MaxSeq(context.Background(), "sg_g1"); !errors.Is(err, h.err) {
		t.Errorf("database failure: %v", err)
	}
}

// Pulls asked while a read is in flight are not answered by it: they wait
// for the next read, which sees a save committed after that first read
// began (a notified member must find the message it was told of).
func TestMaxSeqLookupIsFresh(t *testing.T) {
	h := &heldMaxSeqs{max: map[string]int64{"sg_g1": 7}, entered: make(chan struct{}), release: make(chan struct{})}
	l := newMaxSeqLookup(h)
	first := make(chan int64, 1)
	go func() {
		v, _ := l.MaxSeq(context.Background(), "sg_g1")
		first <- v
	}()
	select {
	case <-h.entered:
	case <-time.After(5 * time.Second):
		t.Fatal("the first read never started")
	}
	h.mu.Lock()
	h.max["sg_g1"] = 8 // a save commits while the first read is in flight
	h.mu.Unlock()
	const n = 20
	got := make(chan int64, n)
	for range n {
		go func() {
			v, err := l.MaxSeq(context.Background(), "sg_g1")
			if err != nil {
				t.Error(err)
			}
			got <- v
		}()
	}
	close(h.release)
	if v := <-first; v != 7 {
		t.Errorf("first read = %d, want 7 (it began before the save)", v)
	}
	for range n {
		select {
		case v := <-got:
			if v != 8 {
				t.Fatalf("a pull asked after the save read max_seq %d, want 8", v)
			}
		case <-time.After(5 * time.Second):
			t.Fatal("a pull was never answered")
		}
	}
}
