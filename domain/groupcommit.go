package domain

import (
	"context"
	"sync"
	"time"
)

// GroupCommit runs one batch operation for many concurrent callers with as
// few calls as possible: group commit without a timer. A caller that finds
// no batch in flight runs its request at once, alone (no added latency at
// low load); requests that arrive while a batch is in flight queue up and
// go together as soon as it returns, so under load one round trip carries
// many requests. Each leader runs one batch and hands the next to the first
// queued caller, so no caller waits for more than the batch in flight and
// its own. It is the pattern of the accept step's pipelined scripts and of
// the accept-time duplicate lookup (docs/pipeline.md).
type GroupCommit[Req, Res any] struct {
	flush    func(ctx context.Context, batch []*Call[Req, Res])
	maxBatch int
	linger   time.Duration
	full     func(queued []*Call[Req, Res]) bool
	wake     chan struct{} // a lingering leader's queue became full

	mu        sync.Mutex
	busy      bool // a leader is running (or lingering before) a batch
	lingering bool
	queue     []*Call[Req, Res]
}

// Call is one caller's request in a batch; flush sets Res and Err.
type Call[Req, Res any] struct {
	Req  Req
	Res  Res
	Err  error
	lead bool          // woken to run the next batch, not with a result
	done chan struct{} // receives once: result ready, or lead
}

// NewGroupCommit returns a GroupCommit whose batches flush runs, in arrival
// order, at most maxBatch requests each (0: no limit). flush must set every
// call's Res or Err and must not keep the slice.
func NewGroupCommit[Req, Res any](maxBatch int, flush func(ctx context.Context, batch []*Call[Req, Res])) *GroupCommit[Req, Res] {
	return &GroupCommit[Req, Res]{flush: flush, maxBatch: maxBatch}
}

// WithLinger makes a caller that finds no batch in flight wait up to d for
// more requests before it runs its batch, unless full says the queue (its
// own request first) already holds enough; a request that makes the queue
// full ends the wait at once. Callers queued behind a batch in flight never
// linger: that batch's duration was their window. It trades up to d of
// latency at light load for fuller batches (the save stage's
// save.batch_wait; docs/pipeline.md). Call it before the first Do; it
// returns g.
func (g *GroupCommit[Req, Res]) WithLinger(d time.Duration, full func(queued []*Call[Req, Res]) bool) *GroupCommit[Req, Res] {
	g.linger, g.full, g.wake = d, full, make(chan struct{}, 1)
	return g
}

// Do runs req in the next batch and returns its result. The batch runs
// under a context without ctx's cancellation (it carries other callers'
// requests); a queued request is never abandoned, so its wait is bounded by
// the batch operation's own timeouts.
func (g *GroupCommit[Req, Res]) Do(ctx context.Context, req Req) (Res, error) {
	c := &Call[Req, Res]{Req: req, done: make(chan struct{}, 1)}
	g.mu.Lock()
	g.queue = append(g.queue, c)
	switch {
	case g.busy:
		if g.lingering && g.full(g.queue) {
			g.lingering = false
			g.wake <- struct{}{}
		}
		g.mu.Unlock()
		<-c.done
		if !c.lead {
			return c.Res, c.Err
		}
		g.mu.Lock()
	case g.linger > 0 && !g.full(g.queue):
		g.busy = true
		g.lingerLocked()
	}
	g.busy = true
	batch := g.take()
	g.mu.Unlock()

	g.flush(context.WithoutCancel(ctx), batch)

	g.mu.Lock()
	if len(g.queue) > 0 {
		next := g.queue[0]
		next.lead = true
		next.done <- struct{}{}
	} else {
		g.busy = false
	}
	g.mu.Unlock()
	for _, o := range batch {
		if o != c {
			o.done <- struct{}{}
		}
	}
	return c.Res, c.Err
}

// lingerLocked waits, with g.mu released, until g.linger has passed or a
// follower filled the queue; the caller holds g.mu, and holds it again on
// return.
func (g *GroupCommit[Req, Res]) lingerLocked() {
	g.lingering = true
	g.mu.Unlock()
	t := time.NewTimer(g.linger)
	select {
	case <-t.C:
	case <-g.wake:
	}
	t.Stop()
	g.mu.Lock()
	if !g.lingering {
		// A follower filled the queue as the timer fired: drop its wake-up.
		select {
		case <-g.wake:
		default:
		}
	}
	g.lingering = false
}

// take removes the next batch from the queue; the caller holds g.mu. A
// leader's own call is always in it: a caller that finds no batch in
// flight finds the queue empty, and a woken leader is the queue's first.
func (g *GroupCommit[Req, Res]) take() []*Call[Req, Res] {
	n := len(g.queue)
	if g.maxBatch > 0 && n > g.maxBatch {
		n = g.maxBatch
	}
	batch := g.queue[:n:n]
	if n == len(g.queue) {
		g.queue = nil
	} else {
		g.queue = append([]*Call[Req, Res](nil), g.queue[n:]...)
	}
	return batch
}
