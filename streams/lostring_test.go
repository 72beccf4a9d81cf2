package streams

import (
	"testing"
	"time"
)

// The ring keeps the newest accepts in order, at most limit of them and
// none older than the window before the newest.
func TestAcceptRingKeepsTheWindow(t *testing.T) {
	at := func(i int) recentAccept {
		return recentAccept{at: time.Duration(i) * time.Second, seq: int64(i)}
	}
	seqs := func(q *acceptRing) []int64 {
		var out []int64
		for _, r := range q.all() {
			out = append(out, r.seq)
		}
		return out
	}
	q := &acceptRing{}
	for i := 1; i <= 200; i++ {
		q.push(at(i), time.Hour, 100)
	}
	if got := seqs(q); len(got) != 100 || got[0] != 101 || got[99] != 200 {
		t.Fatalf("limit: kept %d, from %v to %v", len(got), got[0], got[len(got)-1])
	}
	for i := 1; i < len(q.all()); i++ {
		if q.all()[i].seq != q.all()[i-1].seq+1 {
			t.Fatal("out of order")
		}
	}
	q.push(at(300), 30*time.Second, 100) // everything before 270 s is older than the window
	if got := seqs(q); len(got) != 1 || got[0] != 300 {
		t.Fatalf("window: kept %v", got)
	}
}
