package chat

import (
	"context"
	"errors"
	"testing"

	"github.com/nexo-im/nexo/domain"
)

type fakeOriginals struct {
	saved map[domain.ClientMsgKey]domain.Message
	err   error
	calls int
}

func (f *fakeOriginals) ByClientMsgIDs(_ context.Context, keys []domain.ClientMsgKey) (map[domain.ClientMsgKey]domain.Message, error) {
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
	if m, err := l.find(ctx, saved); err != nil || m.Seq != 7 {
		t.Errorf("saved key: %+v, %v", m, err)
	}
	if _, err := l.find(ctx, domain.ClientMsgKey{SenderID: "alice", ClientMsgID: "c2"}); !errors.Is(err, domain.ErrMessageNotFound) {
		t.Errorf("unsaved key: %v, want ErrMessageNotFound", err)
	}
	f.err = errors.New("db down")
	if _, err := l.find(ctx, saved); !errors.Is(err, f.err) {
		t.Errorf("database failure: %v", err)
	}
	if f.calls != 3 {
		t.Errorf("%d queries for 3 sequential lookups, want 3", f.calls)
	}
	if newOriginalLookup(nil) != nil {
		t.Error("no Originals must mean no check")
	}
}
