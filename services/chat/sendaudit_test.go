package chat

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/nexo-im/nexo/configs"
	"github.com/nexo-im/nexo/domain"
	"github.com/nexo-im/nexo/store"
	"github.com/nexo-im/nexo/streams"
)

type everyone struct{}

func (everyone) Existing(_ context.Context, ids []string) (map[string]bool, error) {
	out := map[string]bool{}
	for _, id := range ids {
		out[id] = true
	}
	return out, nil
}

// freshAccepter issues seq 7 and remembers nothing (Redis lost the record).
type freshAccepter struct{}

func (freshAccepter) Accept(context.Context, streams.AcceptRequest) (streams.Accepted, error) {
	return streams.Accepted{Seq: 7}, nil
}
func (freshAccepter) Retire(context.Context, string, int64) error { return nil }
func (freshAccepter) MarkSaved(context.Context, *domain.Message, int64) error {
	return nil
}

// savedBefore finds every message already in the database at seq 3.
type savedBefore struct{}

func (savedBefore) SaveBatch(_ context.Context, msgs []domain.Message) ([]store.SaveResult, error) {
	orig := msgs[0]
	orig.ServerMsgID, orig.Seq = "original", 3
	return []store.SaveResult{{Outcome: store.Duplicate, Original: orig}}, nil
}

type noFanout struct{}

func (noFanout) Deliver(*domain.Message, string) {}

// TestSyncPathCountsDuplicatesFoundInTheDatabase: a synchronous send whose
// insert meets the original (uk_sender_client_msg) is answered with the
// original and counted in nexo_send_duplicates_in_database_total.
func TestSyncPathCountsDuplicatesFoundInTheDatabase(t *testing.T) {
	reg := prometheus.NewRegistry()
	s := NewService(Deps{Mode: NewMode(configs.TwoPhase{}), Msg: configs.Default().Msg, Accepter: freshAccepter{},
		Saver: savedBefore{}, Users: everyone{}, Fanout: noFanout{}, Log: slog.New(slog.DiscardHandler), Registry: reg})
	ack, err := s.Send(context.Background(), Origin{UserID: "alice"}, SendRequest{ClientMsgID: "dup-1",
		SessionType: int(domain.SessionSingle), RecvID: "bob", MsgType: int(domain.MsgText), Content: ContentJSON{Text: "hi"}})
	if err != nil {
		t.Fatal(err)
	}
	if ack.ServerMsgID != "original" || ack.Seq != 3 || ack.AckType != string(domain.AckSaved) {
		t.Fatalf("ack %+v, want the original's", ack)
	}
	if n := testutil.ToFloat64(s.metrics.dbDuplicates); n != 1 {
		t.Fatalf("nexo_send_duplicates_in_database_total = %v, want 1", n)
	}
}

// brokenSaver fails every save.
type brokenSaver struct{}

func (brokenSaver) SaveBatch(context.Context, []domain.Message) ([]store.SaveResult, error) {
	return nil, errors.New("database gone")
}

// TestFailedSendWritesAckAuditLine: a send that fails after validation
// writes a warn "ack" line with the message's keys, the sender, its
// platform and its connection.
func TestFailedSendWritesAckAuditLine(t *testing.T) {
	var logs strings.Builder
	audit := domain.NewAudit(slog.New(slog.NewJSONHandler(&logs, nil)), "i-3", 10, 10)
	s := NewService(Deps{Mode: NewMode(configs.TwoPhase{}), Msg: configs.Default().Msg, Accepter: freshAccepter{},
		Saver: brokenSaver{}, Users: everyone{}, Fanout: noFanout{}, Log: slog.New(slog.DiscardHandler), Audit: audit})
	_, err := s.Send(context.Background(), Origin{UserID: "alice", ConnID: "conn-8", PlatformID: 2}, SendRequest{ClientMsgID: "f-1",
		SessionType: int(domain.SessionSingle), RecvID: "bob", MsgType: int(domain.MsgText), Content: ContentJSON{Text: "hi"}})
	if err == nil {
		t.Fatal("send with the database gone succeeded")
	}
	var l map[string]any
	if err := json.Unmarshal([]byte(logs.String()), &l); err != nil {
		t.Fatalf("line %q: %v", logs.String(), err)
	}
	for k, v := range map[string]any{"level": "WARN", "point": "ack", "result": "failed", "user_id": "alice", "platform_id": 2.0,
		"conn_id": "conn-8", "conversation_id": domain.SingleConversationID("alice", "bob"), "seq": 7.0, "instance_id": "i-3"} {
		if l[k] != v {
			t.Errorf("%s = %v, want %v (line %v)", k, l[k], v, l)
		}
	}
	if id, _ := l["server_msg_id"].(string); id == "" {
		t.Errorf("no server_msg_id in %v", l)
	}
}

// TestTwoPhaseSendDoesNotWaitOnASlowDuplicateCheck: a two-phase send whose
// duplicate check is slower than two_phase.duplicate_check_wait is
// accepted without its answer and counted; with the wait at 0 the same
// send waits for the answer and is told it is the saved original.
func TestTwoPhaseSendDoesNotWaitOnASlowDuplicateCheck(t *testing.T) {
	req := SendRequest{ClientMsgID: "slow-1", SessionType: int(domain.SessionSingle), RecvID: "bob",
		MsgType: int(domain.MsgText), Content: ContentJSON{Text: "hi"}}
	key := domain.ClientMsgKey{SenderID: "alice", ClientMsgID: "slow-1"}
	for _, wait := range []time.Duration{5 * time.Millisecond, 0} {
		orig := &fakeOriginals{saved: map[domain.ClientMsgKey]domain.Message{key: {ServerMsgID: "original", Seq: 3, SenderID: "alice"}},
			hold: make(chan struct{})}
		reg := prometheus.NewRegistry()
		s := NewService(Deps{Mode: NewMode(configs.TwoPhase{Enabled: true, FailOpen: true, IdempotencyTTL: time.Hour, DuplicateCheckWait: wait}),
			Msg: configs.Default().Msg, Accepter: freshAccepter{}, Users: everyone{}, Fanout: noFanout{}, Originals: orig,
			Log: slog.New(slog.DiscardHandler), Registry: reg})
		if wait == 0 {
			close(orig.hold) // the database answers, however long it takes
		}
		ack, err := s.Send(context.Background(), Origin{UserID: "alice"}, req)
		if err != nil {
			t.Fatal(err)
		}
		over := testutil.ToFloat64(s.metrics.lookupsOverWait)
		switch wait {
		case 0:
			if ack.ServerMsgID != "original" || ack.AckType != string(domain.AckSaved) || over != 0 {
				t.Fatalf("wait 0: ack %+v (over the wait %v), want the original as saved", ack, over)
			}
		default:
			if ack.ServerMsgID == "original" || ack.AckType != string(domain.AckAccepted) || ack.Seq != 7 || over != 1 {
				t.Fatalf("wait %v: ack %+v, %v over the wait; want a new accept and 1", wait, ack, over)
			}
			close(orig.hold)
		}
	}
}
