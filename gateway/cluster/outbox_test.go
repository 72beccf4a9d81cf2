package cluster

import (
	"strconv"
	"testing"

	"github.com/nexo-im/nexo/streams"
)

// The outbox keeps its order and its bound, holds no storage before the
// first push nor after it drains, and leaves a token for each wake-up the
// flusher needs.
func TestOutboxKeepsOrderAndBoundAndGivesStorageBack(t *testing.T) {
	q := newOutbox()
	if q.buf != nil {
		t.Fatalf("a new outbox holds %d slots", len(q.buf))
	}
	for i := range outboxSize {
		if !q.put(streams.BusPush{Except: strconv.Itoa(i)}) {
			t.Fatalf("push %d refused below the bound", i)
		}
	}
	if q.put(streams.BusPush{Except: "over"}) {
		t.Fatal("a push over outboxSize was queued")
	}
	select {
	case <-q.ready:
	default:
		t.Fatal("no token after pushes")
	}
	next := 0
	for {
		batch := q.take(nil)
		if len(batch) == 0 {
			break
		}
		if len(batch) > outboxBatch {
			t.Fatalf("a batch of %d, over outboxBatch", len(batch))
		}
		for _, it := range batch {
			if it.Except != strconv.Itoa(next) {
				t.Fatalf("item %d came out as %q", next, it.Except)
			}
			next++
		}
	}
	if next != outboxSize || q.buf != nil {
		t.Fatalf("took %d of %d; %d slots kept after draining", next, outboxSize, len(q.buf))
	}
	// A partial take leaves the head mid-ring; later pushes wrap around it
	// and everything still comes out in order.
	put := func(from, to int) {
		for i := from; i < to; i++ {
			q.put(streams.BusPush{Except: strconv.Itoa(i)})
		}
	}
	put(0, 600)
	got := q.take(nil)
	put(600, 1500)
	for b := q.take(nil); len(b) > 0; b = q.take(nil) {
		got = append(got, b...)
	}
	for i, it := range got {
		if it.Except != strconv.Itoa(i) {
			t.Fatalf("after wrapping, item %d came out as %q", i, it.Except)
		}
	}
	if len(got) != 1500 {
		t.Fatalf("took %d of 1500", len(got))
	}
}
