package streams_test

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/nexo-im/nexo/store/storetest"
)

// TestConsumerPaceGathersABatch: with Pace set, entries that arrive one by
// one after a read that was not full are handed over as one batch after
// the pace, not one read each (without it the consumer, blocked in its
// read, wakes at the first of them).
func TestConsumerPaceGathersABatch(t *testing.T) {
	rdb, prefix := storetest.Redis(t)
	b := newBench(t, rdb, prefix+":pace")
	sizes := make(chan int, 16)
	h := b.handler("c1", nil)
	cfg := b.config("c1")
	cfg.Count, cfg.Block, cfg.Pace = 100, time.Second, 2*time.Second
	b.run(cfg, func(ctx context.Context, batch []redis.XMessage) error {
		sizes <- len(batch)
		return h(ctx, batch)
	})
	b.add(1, 10)
	if n := <-sizes; n != 1 {
		t.Fatalf("first batch: %d entries, want 1", n)
	}
	later := b.add(5, 10) // one round trip each: the unpaced consumer wakes at the first
	b.waitFor("the later entries handled", b.allSeen(later))
	if first := <-sizes; first != 5 {
		t.Fatalf("the 5 later entries came in a batch of %d first, want all 5", first)
	}
}
