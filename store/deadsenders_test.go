package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/nexo-im/nexo/configs"
	"github.com/nexo-im/nexo/store"
	"github.com/nexo-im/nexo/store/storetest"
)

// TestDeadSenders: the count-th dead letter of a sender within the window
// blocks it; another instance sees the block after a Refresh; other senders
// are not affected; the block ends by itself. Real Redis and the embedded
// one; a short block, polled with a deadline.
func TestDeadSenders(t *testing.T) {
	for name, open := range storetest.RedisBackends() {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			rdb, keys := open(t)
			t.Cleanup(func() { storetest.DeletePrefix(rdb, "rate:"+keys.Prefix) })
			cfg := configs.DeadLetters{Count: 3, Window: time.Hour, Block: 300 * time.Millisecond}
			a := store.NewDeadSenders(rdb, keys, cfg, nil)
			b := store.NewDeadSenders(rdb, keys, cfg, nil)
			ctx := context.Background()
			for i := range 2 {
				if blocked, err := a.DeadLetter(ctx, "olga"); err != nil || blocked {
					t.Fatalf("dead letter %d: blocked %v, err %v", i+1, blocked, err)
				}
			}
			if a.Blocked("olga") != 0 {
				t.Fatal("blocked before the count was reached")
			}
			if blocked, err := a.DeadLetter(ctx, "olga"); err != nil || !blocked {
				t.Fatalf("third dead letter: blocked %v, err %v", blocked, err)
			}
			if w := a.Blocked("olga"); w <= 0 || w > cfg.Block {
				t.Fatalf("on the counting instance: blocked for %v, want up to %v", w, cfg.Block)
			}
			if b.Blocked("olga") != 0 {
				t.Fatal("the other instance cannot know before a refresh")
			}
			if err := b.Refresh(ctx); err != nil {
				t.Fatal(err)
			}
			if w := b.Blocked("olga"); w <= 0 || w > cfg.Block {
				t.Fatalf("on the other instance: blocked for %v, want up to %v", w, cfg.Block)
			}
			if b.Blocked("pete") != 0 {
				t.Fatal("another sender is blocked")
			}
			deadline := time.Now().Add(5 * time.Second)
			for b.Blocked("olga") > 0 {
				if time.Now().After(deadline) {
					t.Fatal("still blocked after 5 s")
				}
				time.Sleep(20 * time.Millisecond)
			}
			if err := b.Refresh(ctx); err != nil {
				t.Fatal(err)
			}
			if n := rdb.ZCard(ctx, keys.Key("dead_blocked")).Val(); n != 0 {
				t.Fatalf("%d ended blocks left in Redis", n)
			}
			if store.NewDeadSenders(rdb, keys, configs.DeadLetters{}, nil) != nil {
				t.Fatal("count 0 must turn the limit off (nil)")
			}
		})
	}
}
