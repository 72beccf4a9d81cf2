package domain

import (
	"context"
	"errors"
	"runtime"
	"sync"
	"testing"
	"time"
)

// Every caller gets its own result, requests queued behind a batch in
// flight go together, and no batch exceeds maxBatch.
func TestGroupCommitBatchesConcurrentCallers(t *testing.T) {
	release := make(chan struct{})
	first := make(chan struct{})
	var mu sync.Mutex
	var sizes []int
	g := NewGroupCommit(4, func(_ context.Context, batch []*Call[int, int]) {
		mu.Lock()
		sizes = append(sizes, len(batch))
		n := len(sizes)
		mu.Unlock()
		if n == 1 {
			close(first)
			<-release // hold the first batch so the rest queue up
		}
		for _, c := range batch {
			if c.Req%7 == 0 {
				c.Err = errors.New("seven")
				continue
			}
			c.Res = c.Req * 10
		}
	})
	const n = 11
	var wg sync.WaitGroup
	errs := make(chan error, n)
	run := func(i int) {
		defer wg.Done()
		res, err := g.Do(context.Background(), i)
		switch {
		case i%7 == 0 && err == nil:
			errs <- errors.New("an error was lost")
		case i%7 != 0 && (err != nil || res != i*10):
			errs <- errors.New("a result went to the wrong caller")
		}
	}
	wg.Add(1)
	go run(1)
	<-first
	for i := 2; i <= n; i++ {
		wg.Add(1)
		go run(i)
	}
	// Wait until the ten callers are queued behind the held batch.
	deadline := time.Now().Add(10 * time.Second)
	for {
		g.mu.Lock()
		q := len(g.queue)
		g.mu.Unlock()
		if q == n-1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d callers queued, want %d", q, n-1)
		}
		runtime.Gosched()
	}
	close(release)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if want := []int{1, 4, 4, 2}; len(sizes) != len(want) || sizes[0] != 1 || sizes[1] != 4 || sizes[2] != 4 || sizes[3] != 2 {
		t.Errorf("batch sizes %v, want %v", sizes, want)
	}
}

// A caller's cancellation does not cancel the batch that carries others.
func TestGroupCommitIgnoresCallerCancellation(t *testing.T) {
	g := NewGroupCommit(0, func(ctx context.Context, batch []*Call[int, error]) {
		for _, c := range batch {
			c.Res = ctx.Err()
		}
	})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if res, err := g.Do(ctx, 1); err != nil || res != nil {
		t.Fatalf("batch saw the caller's cancellation: %v %v", res, err)
	}
}

// A caller that finds no batch in flight lingers for more requests; the
// request that makes the queue full ends the wait at once, and callers
// queued behind a batch in flight do not linger.
func TestGroupCommitLingerEndsWhenTheQueueIsFull(t *testing.T) {
	var mu sync.Mutex
	var sizes []int
	hold := make(chan struct{})
	g := NewGroupCommit(0, func(_ context.Context, batch []*Call[int, int]) {
		mu.Lock()
		sizes = append(sizes, len(batch))
		first := len(sizes) == 1
		mu.Unlock()
		if first {
			<-hold
		}
		for _, c := range batch {
			c.Res = c.Req
		}
	}).WithLinger(time.Hour, func(q []*Call[int, int]) bool { return len(q) >= 3 })
	waitFor := func(what string, cond func() bool) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for {
			g.mu.Lock()
			ok := cond()
			g.mu.Unlock()
			if ok {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("timed out waiting until %s", what)
			}
			runtime.Gosched()
		}
	}
	var wg sync.WaitGroup
	run := func(i int) {
		defer wg.Done()
		if res, err := g.Do(context.Background(), i); err != nil || res != i {
			t.Errorf("caller %d got %d, %v", i, res, err)
		}
	}
	wg.Add(2)
	go run(1)
	waitFor("the first caller lingers", func() bool { return g.lingering })
	go run(2)
	waitFor("the second caller queues", func() bool { return len(g.queue) == 2 })
	if !g.lingering {
		t.Fatal("a queue of two (not full) ended the linger")
	}
	wg.Add(1)
	go run(3) // fills the queue: the batch of three goes now, not in an hour
	waitFor("the batch of three is in flight", func() bool { return g.queue == nil && !g.lingering })
	// Behind the held batch, a lone caller queues and then leads without lingering.
	wg.Add(1)
	go run(4)
	waitFor("the fourth caller queues", func() bool { return len(g.queue) == 1 })
	close(hold)
	wg.Wait()
	if len(sizes) != 2 || sizes[0] != 3 || sizes[1] != 1 {
		t.Errorf("batch sizes %v, want [3 1]", sizes)
	}
}

// A lone caller whose queue never fills waits the linger out, then runs.
func TestGroupCommitLingerIsBounded(t *testing.T) {
	g := NewGroupCommit(0, func(_ context.Context, batch []*Call[int, int]) {
		for _, c := range batch {
			c.Res = c.Req
		}
	}).WithLinger(20*time.Millisecond, func(q []*Call[int, int]) bool { return len(q) >= 2 })
	began := time.Now()
	if res, err := g.Do(context.Background(), 7); err != nil || res != 7 {
		t.Fatalf("got %d, %v", res, err)
	}
	if waited := time.Since(began); waited < 20*time.Millisecond {
		t.Errorf("returned after %v: did not linger", waited)
	}
	if g.lingering || g.busy {
		t.Errorf("left lingering=%v busy=%v", g.lingering, g.busy)
	}
}
