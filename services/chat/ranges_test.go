package chat

import (
	"context"
	"errors"
	"fmt"
	"hash/maphash"
	"testing"
	"time"

	"github.com/nexo-im/nexo/domain"
)

// countingReader answers Range with one message per seq and notes each
// query; conversations named in fail answer an error.
type countingReader struct {
	queries []string
	fail    map[string]error
}

func (r *countingReader) Range(_ context.Context, conv string, begin, end int64, limit int) ([]domain.Message, error) {
	r.queries = append(r.queries, fmt.Sprintf("%s[%d,%d]/%d", conv, begin, end, limit))
	if err := r.fail[conv]; err != nil {
		return nil, err
	}
	var out []domain.Message
	for s := begin; s <= end && len(out) < limit; s++ {
		out = append(out, domain.Message{ConversationID: conv, Seq: s})
	}
	return out, nil
}

func (r *countingReader) BySeqs(context.Context, string, []int64) ([]domain.Message, error) {
	return nil, nil
}

// The pulls of one batch that ask the same window share one query; other
// windows get their own, and an error reaches every pull of its window.
func TestRangeLookupSharesAWindow(t *testing.T) {
	down := errors.New("db down")
	r := &countingReader{fail: map[string]error{"sg_bad": down}}
	l := newRangeLookup(r)
	keys := []rangeKey{
		{"sg_g1", 8, 8, 100}, {"sg_g1", 8, 8, 100}, {"sg_g1", 5, 8, 100},
		{"sg_bad", 1, 2, 100}, {"sg_g1", 8, 8, 100}, {"sg_bad", 1, 2, 100},
	}
	var batch []*domain.Call[rangeKey, rangeResult]
	for _, k := range keys {
		batch = append(batch, &domain.Call[rangeKey, rangeResult]{Req: k})
	}
	l.flush(context.Background(), batch)
	if got := fmt.Sprint(r.queries); got != "[sg_g1[8,8]/100 sg_g1[5,8]/100 sg_bad[1,2]/100]" {
		t.Fatalf("queries %s, want one per distinct window in arrival order", got)
	}
	for i, c := range batch {
		switch k := c.Req; {
		case k.conversationID == "sg_bad":
			if !errors.Is(c.Err, down) {
				t.Errorf("call %d: err %v, want %v", i, c.Err, down)
			}
		case c.Err != nil || int64(len(c.Res.msgs)) != k.end-k.begin+1 || c.Res.msgs[0].Seq != k.begin:
			t.Errorf("call %d (%+v): %d rows, %v", i, k, len(c.Res.msgs), c.Err)
		}
	}
	if msgs, err := l.Range(context.Background(), "sg_g1", 1, 3, 2); err != nil || len(msgs) != 2 {
		t.Errorf("Range alone: %d rows, %v; want 2 (the limit)", len(msgs), err)
	}
}

// heldReader blocks Range of conversation held until release is closed.
type heldReader struct {
	countingReader
	held    string
	entered chan struct{}
	release chan struct{}
}

func (r *heldReader) Range(ctx context.Context, conv string, begin, end int64, limit int) ([]domain.Message, error) {
	if conv == r.held {
		r.entered <- struct{}{}
		<-r.release
	}
	return []domain.Message{{ConversationID: conv, Seq: begin}}, nil
}

// A slow read of one conversation does not hold pulls of another: only
// pulls of the same stripe of conversations wait for each other.
func TestRangeLookupDoesNotSerializeConversations(t *testing.T) {
	r := &heldReader{held: "sg_slow", entered: make(chan struct{}), release: make(chan struct{})}
	l := newRangeLookup(r)
	stripe := func(c string) uint64 { return maphash.String(l.seed, c) % rangeStripes }
	other := "sg_g0"
	for i := range 1000 {
		if c := fmt.Sprintf("sg_g%d", i); stripe(c) != stripe("sg_slow") {
			other = c
			break
		}
	}
	slow := make(chan error, 1)
	go func() {
		_, err := l.Range(context.Background(), "sg_slow", 1, 1, 100)
		slow <- err
	}()
	<-r.entered
	done := make(chan struct{})
	go func() {
		defer close(done)
		if msgs, err := l.Range(context.Background(), other, 4, 4, 100); err != nil || len(msgs) != 1 {
			t.Errorf("other conversation: %v, %v", msgs, err)
		}
	}()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("a pull of another conversation waited for a slow one")
	}
	close(r.release)
	if err := <-slow; err != nil {
		t.Fatal(err)
	}
}
