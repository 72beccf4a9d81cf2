package chat

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/nexo-im/nexo/domain"
)

type fakeOriginals struct {
	saved map[domain.ClientMsgKey]domain.Message
	err   error
	calls int
	// hold, when set, keeps every query waiting until it is closed.
	hold chan struct{}
}

func (f *fakeOriginals) ByClientMsgIDs(_ context.Context, keys []domain.ClientMsgKey) (map[domain.ClientMsgKey]domain.Message, error) {
	if f.hold != nil {
		<-f.hold
	}
	f.calls++
	if f.err != nil {
		return nil, f.err
	}
	out := map[domain.ClientMsgKey]domain.Message{}
	for _, k := range keys {
		if m, ok := f.saved[k]; ok {
			out[k] = m
		}
	}
	return out, nil
}

// A saved key answers its message, an unsaved one ErrMessageNotFound, and
// a database failure its error (the send then goes on; see savedOriginal).
func TestOriginalLookup(t *testing.T) {
	ctx := context.Background()
	saved := domain.ClientMsgKey{SenderID: "alice", ClientMsgID: "c1"}
	f := &fakeOriginals{saved: map[domain.ClientMsgKey]domain.Message{saved: {ServerMsgID: "s1", Seq: 7}}}
	l := newOriginalLookup(f)
	if m, err := l.find(ctx, saved, 0); err != nil || m.Seq != 7 {
		t.Errorf("saved key: %+v, %v", m, err)
	}
	if _, err := l.find(ctx, domain.ClientMsgKey{SenderID: "alice", ClientMsgID: "c2"}, 0); !errors.Is(err, domain.ErrMessageNotFound) {
		t.Errorf("unsaved key: %v, want ErrMessageNotFound", err)
	}
	f.err = errors.New("db down")
	if _, err := l.find(ctx, saved, 0); !errors.Is(err, f.err) {
		t.Errorf("database failure: %v", err)
	}
	if f.calls != 3 {
		t.Errorf("%d queries for 3 sequential lookups, want 3", f.calls)
	}
	if newOriginalLookup(nil) != nil {
		t.Error("no Originals must mean no check")
	}
}

// With a wait, a database slower than it leaves the send to go on
// (errLookupTooSlow) while the query finishes on its own; one that answers
// in time is heard as without a wait.
func TestOriginalLookupWait(t *testing.T) {
	ctx := context.Background()
	saved := domain.ClientMsgKey{SenderID: "alice", ClientMsgID: "c1"}
	f := &fakeOriginals{saved: map[domain.ClientMsgKey]domain.Message{saved: {ServerMsgID: "s1", Seq: 7}}, hold: make(chan struct{})}
	l := newOriginalLookup(f)
	if _, err := l.find(ctx, saved, 5*time.Millisecond); !errors.Is(err, errLookupTooSlow) {
		t.Fatalf("a database slower than the wait: %v, want errLookupTooSlow", err)
	}
	close(f.hold)
	if m, err := l.find(ctx, saved, time.Minute); err != nil || m.Seq != 7 {
		t.Fatalf("a database in time: %+v, %v", m, err)
	}
}
