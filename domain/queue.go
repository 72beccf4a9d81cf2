package domain

import (
	"sync"

	"github.com/gammazero/deque"
)

// Queue is a bounded FIFO for many producers and one consumer whose
// storage grows with what is queued and shrinks as it drains
// (github.com/gammazero/deque: powers of two, down to 16 slots), so a
// server that queues nothing holds none of the bound. A channel of the
// bound's size, allocated whole, cost megabytes on every server (the push
// queue's lanes, the cluster relay's outbox; docs/bench/README.md,
// "Memory at a closed loop").
type Queue[T any] struct {
	mu    sync.Mutex
	q     deque.Deque[T]
	limit int
	ready chan struct{}
}

// NewQueue returns an empty queue of at most limit items (at least 1).
func NewQueue[T any](limit int) *Queue[T] {
	return &Queue[T]{limit: max(limit, 1), ready: make(chan struct{}, 1)}
}

// Put queues v and signals Ready; false (nothing queued) when limit items
// are queued already.
func (q *Queue[T]) Put(v T) bool {
	q.mu.Lock()
	if q.q.Len() >= q.limit {
		q.mu.Unlock()
		return false
	}
	q.q.PushBack(v)
	q.mu.Unlock()
	select {
	case q.ready <- struct{}{}:
	default: // a token is waiting already
	}
	return true
}

// Take removes the oldest item; false when none is queued.
func (q *Queue[T]) Take() (T, bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.q.Len() == 0 {
		var zero T
		return zero, false
	}
	return q.q.PopFront(), true
}

// TakeUpTo appends the queued items to dst, oldest first, until dst holds
// n, and returns it.
func (q *Queue[T]) TakeUpTo(dst []T, n int) []T {
	q.mu.Lock()
	defer q.mu.Unlock()
	for q.q.Len() > 0 && len(dst) < n {
		dst = append(dst, q.q.PopFront())
	}
	return dst
}

// Ready holds a token when an item was queued since the consumer last
// received from it: a consumer that finds the queue empty waits on it.
func (q *Queue[T]) Ready() <-chan struct{} { return q.ready }

// Len is how many items are queued.
func (q *Queue[T]) Len() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.q.Len()
}

// Cap is how many items the queue's storage holds now (0 before the first
// Put): it grows with Len and shrinks as the queue drains.
func (q *Queue[T]) Cap() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.q.Cap()
}
