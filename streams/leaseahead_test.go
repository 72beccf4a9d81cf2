package streams_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/nexo-im/nexo/domain"
	"github.com/nexo-im/nexo/store/storetest"
	"github.com/nexo-im/nexo/streams"
)

// gatedLeaser hands out consecutive blocks; every lease after the first
// waits until gate is closed.
type gatedLeaser struct {
	gate  chan struct{}
	mu    sync.Mutex
	next  int64
	calls int
}

func (l *gatedLeaser) Lease(ctx context.Context, conv string, block int64) (domain.SeqLease, error) {
	l.mu.Lock()
	l.calls++
	first := l.calls == 1
	l.mu.Unlock()
	if !first {
		select {
		case <-l.gate:
		case <-ctx.Done():
			return domain.SeqLease{}, ctx.Err()
		}
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	base := l.next
	l.next += block
	return domain.SeqLease{ConversationID: conv, Base: base, Ceiling: l.next}, nil
}

// TestNextBlockIsLeasedAhead: once a conversation's block is down to a
// quarter, its next block is leased in the background, so the sends that
// use up the block never wait for the database, and seqs stay contiguous.
func TestNextBlockIsLeasedAhead(t *testing.T) {
	rdb, prefix := storetest.Redis(t)
	keys := streams.NewKeys(prefix, 4)
	leaser := &gatedLeaser{gate: make(chan struct{})}
	acc := streams.NewAccepter(rdb, keys, leaser, 8, time.Hour)
	conv := domain.SingleConversationID("a", "b")
	send := func(i int) int64 {
		t.Helper()
		// A send that waited for the gated lease would time out here.
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		a, err := acc.Accept(ctx, streams.AcceptRequest{Msg: msg("a", "b", fmt.Sprint("c", i)), Route: streams.SaveFirst, Append: true})
		if err != nil {
			t.Fatalf("send %d: %v", i, err)
		}
		return a.Seq
	}
	var seqs []int64
	for i := 0; i < 8; i++ { // the first block; the 6th send leaves 2 and asks for the next
		seqs = append(seqs, send(i))
	}
	close(leaser.gate)
	deadline := time.Now().Add(5 * time.Second)
	for {
		ceil, _ := rdb.HGet(context.Background(), keys.Seq(keys.Shard(conv), conv), "ceil").Int64()
		if ceil >= 16 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the next block was not leased ahead: ceil %d after 8 of 8 seqs", ceil)
		}
		time.Sleep(10 * time.Millisecond) // polling Redis, not synchronising goroutines
	}
	for i := 8; i < 20; i++ {
		seqs = append(seqs, send(i))
	}
	for i, s := range seqs {
		if s != int64(i+1) {
			t.Fatalf("seqs %v: want 1..20 without a gap", seqs)
		}
	}
}
