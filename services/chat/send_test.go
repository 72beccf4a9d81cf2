package chat

import (
	"context"
	"errors"
	"log/slog"
	"testing"

	"github.com/nexo-im/nexo/configs"
	"github.com/nexo-im/nexo/domain"
	"github.com/nexo-im/nexo/store"
)

// seqClash finds seq 7 taken by another message, saves any other.
type seqClash struct{ saved []int64 }

func (c *seqClash) SaveBatch(_ context.Context, msgs []domain.Message) ([]store.SaveResult, error) {
	if msgs[0].Seq == 7 {
		return []store.SaveResult{{Outcome: store.SeqTaken}}, nil
	}
	c.saved = append(c.saved, msgs[0].Seq)
	return []store.SaveResult{{Outcome: store.Saved, Original: msgs[0]}}, nil
}

// leaseLog leases seqs 101, 102, ... from "the database".
type leaseLog struct{ next int64 }

func (l *leaseLog) Lease(_ context.Context, conversationID string, _ int64) (domain.SeqLease, error) {
	l.next++
	return domain.SeqLease{ConversationID: conversationID, Base: 100 + l.next - 1, Ceiling: 100 + l.next}, nil
}

// retireAccepter issues seq 7 and records retires; down fails them.
type retireAccepter struct {
	freshAccepter
	down    bool
	retired []int64
}

func (a *retireAccepter) Retire(_ context.Context, _ string, seq int64) error {
	a.retired = append(a.retired, seq)
	if a.down {
		return errors.New("redis away")
	}
	return nil
}

type fanoutLog struct{ seqs []int64 }

func (f *fanoutLog) Deliver(m *domain.Message, _ string) { f.seqs = append(f.seqs, m.Seq) }

// sendHi sends "hi" from alice to bob with client_msg_id id through s and
// fails the test on an error.
func sendHi(t *testing.T, s *Service, id string) AckJSON {
	t.Helper()
	ack, err := s.Send(context.Background(), Origin{UserID: "alice"}, SendRequest{ClientMsgID: id,
		SessionType: int(domain.SessionSingle), RecvID: "bob", MsgType: int(domain.MsgText), Content: ContentJSON{Text: "hi"}})
	if err != nil {
		t.Fatal(err)
	}
	return ack
}

// TestSyncPathResequencesATakenSeq: a synchronous save whose seq the
// database finds taken goes to a fresh seq (store.Resequence), retiring
// the Redis allocator above it at once; a retire that fails is done again
// before the conversation's next send.
func TestSyncPathResequencesATakenSeq(t *testing.T) {
	accept, saver, fanout := &retireAccepter{down: true}, &seqClash{}, &fanoutLog{}
	s := NewService(Deps{Mode: NewMode(configs.TwoPhase{}), Msg: configs.Default().Msg, Accepter: accept, Saver: saver,
		Leaser: &leaseLog{}, Users: everyone{}, Fanout: fanout, Log: slog.New(slog.DiscardHandler)})
	send := func(id string) AckJSON { return sendHi(t, s, id) }
	if ack := send("c1"); ack.Seq != 101 || ack.AckType != string(domain.AckSaved) || len(fanout.seqs) != 1 || fanout.seqs[0] != 101 {
		t.Fatalf("ack %+v, pushes %v; want saved and pushed at the fresh seq 101", ack, fanout.seqs)
	}
	if len(accept.retired) != 1 || accept.retired[0] != 101 {
		t.Fatalf("retires %v, want 101 at once", accept.retired)
	}
	accept.down = false
	if ack := send("c2"); ack.Seq != 102 || len(accept.retired) != 3 || accept.retired[1] != 101 {
		t.Fatalf("next send: ack %+v, retires %v; want 101 retired again first", ack, accept.retired)
	}
}
