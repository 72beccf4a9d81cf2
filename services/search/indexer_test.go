package search_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/nexo-im/nexo/domain"
	"github.com/nexo-im/nexo/services/search"
	"github.com/nexo-im/nexo/store"
	"github.com/nexo-im/nexo/store/storetest"
)

// writes records each Index call's documents and signals it.
type writes struct {
	mu    sync.Mutex
	calls [][]store.SearchDoc
	seen  chan int // the number of documents of each call
}

func (w *writes) Index(_ context.Context, docs []store.SearchDoc) error {
	w.mu.Lock()
	w.calls = append(w.calls, append([]store.SearchDoc(nil), docs...))
	w.mu.Unlock()
	w.seen <- len(docs)
	return nil
}

func textMessages(conv string, from, n int) []domain.Message {
	msgs := make([]domain.Message, n)
	for i := range msgs {
		msgs[i] = domain.Message{ConversationID: conv, Seq: int64(from + i), SessionType: domain.SessionSingle,
			SenderID: "alice", RecvID: "bob", MsgType: domain.MsgText, Status: domain.StatusNormal,
			Content: domain.Content{Text: fmt.Sprint("hello number ", from+i)}}
	}
	return msgs
}

// After a read shorter than a batch the indexer waits search.index_interval,
// so messages saved meanwhile are written in one statement, and a shutdown
// during that wait returns at once.
func TestIndexerPacesShortReads(t *testing.T) {
	rdb, prefix := storetest.Redis(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	keys := search.NewKeys(prefix)
	w := &writes{seen: make(chan int, 16)}
	const interval = 3 * time.Second // far longer than enqueueing takes, even on a loaded machine
	x := search.NewIndexer(rdb, keys, w, "c1", search.IndexPacing{Batch: 100, Interval: interval},
		slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err := x.EnsureGroup(ctx); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- x.Run(ctx) }()

	enq := search.NewEnqueuer(rdb, keys)
	conv := domain.SingleConversationID("alice", "bob")
	if err := enq.AfterSave(ctx, textMessages(conv, 1, 1), nil); err != nil {
		t.Fatal(err)
	}
	wait := func() int {
		t.Helper()
		select {
		case n := <-w.seen:
			return n
		case <-time.After(10 * time.Second):
			t.Fatal("no index write within 10 s")
			return 0
		}
	}
	if n := wait(); n != 1 {
		t.Fatalf("first write: %d documents, want 1", n)
	}
	// The indexer now waits: these five arrive during the wait.
	if err := enq.AfterSave(ctx, textMessages(conv, 2, 5), nil); err != nil {
		t.Fatal(err)
	}
	if n := wait(); n != 5 {
		t.Fatalf("second write: %d documents, want the 5 enqueued during the wait in one write", n)
	}
	// A shutdown during the wait that follows does not sit it out.
	stopped := time.Now()
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Run: %v", err)
		}
	case <-time.After(interval):
		t.Fatalf("Run still waiting %s after its context ended", interval)
	}
	if d := time.Since(stopped); d >= interval {
		t.Fatalf("shutdown took %s, the whole pacing interval", d)
	}
}
