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

// trim drops what is older than the window without an accept to push it
// out, deletes an emptied ring and shrinks one a load grew, keeping the
// entries still in the window in order.
func TestLostCheckTrimGivesBackAPassedLoad(t *testing.T) {
	c := &lostCheck{window: 30 * time.Second, max: 50000, recent: map[int]*acceptRing{},
		epoch: time.Now().Add(-time.Hour)}
	now := time.Since(c.epoch)
	for i := range 10000 { // shard 0: a load that ended two minutes ago
		c.recent[0] = ringPush(c.recent[0], recentAccept{at: now - 2*time.Minute + time.Duration(i), seq: int64(i)}, c)
	}
	for i := range 5000 { // shard 1: a load whose last 10 accepts are still in the window (and pushed out the rest)
		at := now - 2*time.Minute
		if i >= 4990 {
			at = now - time.Second
		}
		c.recent[1] = ringPush(c.recent[1], recentAccept{at: at, seq: int64(i)}, c)
	}
	if n, slots := c.remembered(); n != 10010 || slots < 15000 {
		t.Fatalf("before: %d entries in %d slots", n, slots)
	}
	if freed := c.trim(); freed < 10000*recentAcceptBytes {
		t.Fatalf("trim reports %d bytes let go for 10,000 entries dropped", freed)
	}
	if freed := c.trim(); freed != 0 {
		t.Fatalf("a second trim reports %d bytes let go, want 0", freed)
	}
	if _, ok := c.recent[0]; ok {
		t.Fatal("a ring with nothing in the window is kept")
	}
	n, slots := c.remembered()
	if n != 10 || slots != 64 {
		t.Fatalf("after: %d entries in %d slots, want 10 in 64", n, slots)
	}
	for i, r := range c.recent[1].all() {
		if r.seq != int64(4990+i) {
			t.Fatalf("entry %d is seq %d, want %d", i, r.seq, 4990+i)
		}
	}
	var nilCheck *lostCheck
	nilCheck.trim() // the check off: nothing to do, no panic
}

func ringPush(q *acceptRing, r recentAccept, c *lostCheck) *acceptRing {
	if q == nil {
		q = &acceptRing{}
	}
	q.push(r, c.window, c.max)
	return q
}
