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
