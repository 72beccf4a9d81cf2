package ws

// ring is a FIFO of outbound items that grows on demand (doubling from 4)
// and gives its memory back when it drains, so an idle connection holds no
// queue storage. The caller enforces the length bound and holds the lock.
type ring struct {
	buf        []outbound
	head, size int
}

func (r *ring) len() int { return r.size }

func (r *ring) push(it outbound) {
	if r.size == len(r.buf) {
		r.grow()
	}
	r.buf[(r.head+r.size)%len(r.buf)] = it
	r.size++
}

// peek returns the oldest item without removing it.
func (r *ring) peek() (outbound, bool) {
	if r.size == 0 {
		return outbound{}, false
	}
	return r.buf[r.head], true
}

func (r *ring) pop() (outbound, bool) {
	if r.size == 0 {
		return outbound{}, false
	}
	it := r.buf[r.head]
	r.buf[r.head] = outbound{} // drop the frame reference for the GC
	r.head = (r.head + 1) % len(r.buf)
	r.size--
	if r.size == 0 {
		r.head = 0
		if len(r.buf) > 16 {
			r.buf = nil // a burst is over: release its storage
		}
	}
	return it, true
}

// filter keeps the items for which keep returns true, in order.
func (r *ring) filter(keep func(outbound) bool) {
	kept := make([]outbound, 0, r.size)
	for r.size > 0 {
		it, _ := r.pop()
		if keep(it) {
			kept = append(kept, it)
		}
	}
	r.buf, r.head, r.size = nil, 0, 0
	for _, it := range kept {
		r.push(it)
	}
}

func (r *ring) grow() {
	n := 2 * len(r.buf)
	if n == 0 {
		n = 4
	}
	buf := make([]outbound, n)
	for i := 0; i < r.size; i++ {
		buf[i] = r.buf[(r.head+i)%len(r.buf)]
	}
	r.buf, r.head = buf, 0
}
