package domain

import (
	"sync"
	"testing"
)

// TestQueueBoundOrderAndStorage: Put refuses past the bound, items come out
// in order across growth, the storage follows what is queued, and
// concurrent producers lose nothing.
func TestQueueBoundOrderAndStorage(t *testing.T) {
	q := NewQueue[int](1000)
	if q.Cap() != 0 {
		t.Fatalf("a new queue holds %d slots", q.Cap())
	}
	refused := 0
	for i := range 1005 {
		if !q.Put(i) {
			refused++
		}
	}
	if refused != 5 || q.Len() != 1000 {
		t.Fatalf("refused %d, queued %d; want 5 and 1000", refused, q.Len())
	}
	peak := q.Cap()
	got := q.TakeUpTo(nil, 600)
	for i := 1000; i < 1500; i++ {
		if !q.Put(i) {
			t.Fatalf("Put %d refused with %d queued", i, q.Len())
		}
	}
	for {
		v, ok := q.Take()
		if !ok {
			break
		}
		got = append(got, v)
	}
	for i, v := range got {
		if want := i; v != want {
			t.Fatalf("item %d is %d", i, v)
		}
	}
	if len(got) != 1500 {
		t.Fatalf("took %d, want 1500", len(got))
	}
	if c := q.Cap(); c >= peak || c > 16 {
		t.Fatalf("a drained queue keeps %d slots (peak %d)", c, peak)
	}

	var wg sync.WaitGroup
	for p := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 200 {
				q.Put(p*1000 + i)
			}
		}()
	}
	wg.Wait()
	last := map[int]int{0: -1, 1: 999, 2: 1999, 3: 2999}
	for n := 0; n < 800; n++ {
		select {
		case <-q.Ready():
		default:
		}
		v, ok := q.Take()
		if !ok {
			t.Fatalf("took %d of 800", n)
		}
		if p := v / 1000; v <= last[p] {
			t.Fatalf("producer %d's %d came after %d", p, v, last[p])
		} else {
			last[p] = v
		}
	}
}
