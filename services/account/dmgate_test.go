package account

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/nexo-im/nexo/domain"
)

// heldBlocks is a block store whose BlockersOf reads its answer, then
// waits while hold is set (until release is closed).
type heldBlocks struct {
	otherBlockCalls
	mu      sync.Mutex
	blocked map[string]bool // "blocker\x00blocked"
	hold    chan struct{}
	reads   atomic.Int64
	started chan struct{} // one value per read, if set
}

func (b *heldBlocks) set(blocker, blocked string, on bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.blocked[blocker+"\x00"+blocked] = on
}

func (b *heldBlocks) BlockersOf(ctx context.Context, userID string, users []string) (map[string]bool, error) {
	b.reads.Add(1)
	b.mu.Lock()
	out := make(map[string]bool)
	for _, u := range users {
		if b.blocked[u+"\x00"+userID] {
			out[u] = true
		}
	}
	hold := b.hold
	b.mu.Unlock()
	if b.started != nil {
		b.started <- struct{}{}
	}
	if hold != nil {
		select {
		case <-hold:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	return out, nil
}

// otherBlockCalls stands for the block store's calls the gate never
// makes (embedding Blocks itself would name a field Blocks).
type otherBlockCalls = Blocks

type everyone struct{}

func (everyone) DMPolicy(context.Context, string) (domain.DMPolicy, error) {
	return domain.DMEveryone, nil
}

// clock is a settable time for the gate's age test (the cache's own
// expiry uses the real clock; the tests' ttl is an hour).
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

func newTestGate(b *heldBlocks) (*DMGate, *clock) {
	g := NewDMGate(everyone{}, b, nil, time.Hour, nil)
	c := &clock{t: time.Unix(1_800_000_000, 0)}
	g.now = c.now
	return g, c
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

// A decision past nine tenths of its ttl is answered at once from the cache while
// the stores are asked again in the background; the new answer serves the
// sends after it.
func TestDMGateRefreshesAheadOffTheSendPath(t *testing.T) {
	ctx := context.Background()
	b := &heldBlocks{blocked: map[string]bool{}}
	g, c := newTestGate(b)
	if err := g.CheckDM(ctx, "mallory", "alice"); err != nil {
		t.Fatalf("first send: %v", err)
	}
	if n := b.reads.Load(); n != 1 {
		t.Fatalf("first send read the blocks %d times, want 1", n)
	}
	// Young decision: no read.
	c.add(53 * time.Minute)
	if err := g.CheckDM(ctx, "mallory", "alice"); err != nil || b.reads.Load() != 1 {
		t.Fatalf("young decision: err %v, reads %d (want nil, 1)", err, b.reads.Load())
	}

	// alice blocks mallory on another instance (no Forget here), and the
	// stores answer slowly.
	b.set("alice", "mallory", true)
	release := make(chan struct{})
	b.mu.Lock()
	b.hold = release
	b.mu.Unlock()
	c.add(26 * time.Minute) // 55 minutes: past nine tenths of the hour
	done := make(chan error, 1)
	go func() { done <- g.CheckDM(ctx, "mallory", "alice") }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("aged decision: %v, want the cached allow", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("a send waited for the background decision")
	}
	waitFor(t, "the background read", func() bool { return b.reads.Load() == 2 })
	// Sends meanwhile start no second refresh of the same key.
	for range 10 {
		if err := g.CheckDM(ctx, "mallory", "alice"); err != nil {
			t.Fatalf("during the refresh: %v", err)
		}
	}
	if n := b.reads.Load(); n != 2 {
		t.Fatalf("%d reads during one refresh, want 2 in all", n)
	}
	close(release)
	waitFor(t, "the block to apply", func() bool {
		return errors.Is(g.CheckDM(ctx, "mallory", "alice"), domain.ErrBlocked)
	})
	if s, bg := testutil.ToFloat64(g.decisions.WithLabelValues("send")), testutil.ToFloat64(g.decisions.WithLabelValues("background")); s != 1 || bg != 1 {
		t.Fatalf("decisions counted: on send %v, in the background %v; want 1 and 1", s, bg)
	}
}

// A decision read before a Forget is not cached after it: it may predate
// the change the Forget announced.
func TestDMGateForgetBeatsADecisionInFlight(t *testing.T) {
	ctx := context.Background()
	b := &heldBlocks{blocked: map[string]bool{}, started: make(chan struct{}, 4)}
	release := make(chan struct{})
	b.hold = release
	g, _ := newTestGate(b)

	done := make(chan error, 1)
	go func() { done <- g.CheckDM(ctx, "mallory", "alice") }()
	<-b.started // the decision has read "not blocked"
	b.mu.Lock()
	b.hold = nil
	b.mu.Unlock()
	b.set("alice", "mallory", true)
	g.Forget("alice") // the block, made through this instance
	close(release)
	if err := <-done; err != nil {
		t.Fatalf("the send that raced the block: %v (it read before the block: allowed)", err)
	}
	if err := g.CheckDM(ctx, "mallory", "alice"); !errors.Is(err, domain.ErrBlocked) {
		t.Fatalf("the send after the block: %v, want blocked (the stale decision was cached)", err)
	}
}
