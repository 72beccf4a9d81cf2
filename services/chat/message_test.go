package chat

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/nexo-im/nexo/configs"
	"github.com/nexo-im/nexo/domain"
	"github.com/nexo-im/nexo/gateway/wire"
)

func TestSendRequestValidation(t *testing.T) {
	ok := func() SendRequest {
		return SendRequest{ClientMsgID: "c1", SessionType: 1, RecvID: "bob", MsgType: 101, Content: ContentJSON{Text: "hi"}}
	}
	cases := []struct {
		name   string
		mutate func(r *SendRequest)
		reason wire.Reason
		field  string
	}{
		{"valid", func(r *SendRequest) {}, "", ""},
		{"missing client_msg_id", func(r *SendRequest) { r.ClientMsgID = "" }, wire.ReasonBadRequest, "client_msg_id"},
		{"long client_msg_id", func(r *SendRequest) { r.ClientMsgID = strings.Repeat("x", 65) }, wire.ReasonBadRequest, "client_msg_id"},
		{"control char in client_msg_id", func(r *SendRequest) { r.ClientMsgID = "a\nb" }, wire.ReasonBadRequest, "client_msg_id"},
		// The server's namespace: a sender must not take a
		// recall notice's idempotency key first.
		{"sys:revoke client_msg_id", func(r *SendRequest) { r.ClientMsgID = "sys:revoke:0193a4c2" }, wire.ReasonBadRequest, "client_msg_id"},
		{"sys: client_msg_id", func(r *SendRequest) { r.ClientMsgID = "sys:x" }, wire.ReasonBadRequest, "client_msg_id"},
		{"SYS: client_msg_id", func(r *SendRequest) { r.ClientMsgID = "SyS:revoke:x" }, wire.ReasonBadRequest, "client_msg_id"},
		{"bad session_type", func(r *SendRequest) { r.SessionType = 2 }, wire.ReasonBadRequest, "session_type"},
		{"missing recv_id", func(r *SendRequest) { r.RecvID = "" }, wire.ReasonBadRequest, "recv_id"},
		{"bad recv_id", func(r *SendRequest) { r.RecvID = "b ob" }, wire.ReasonBadRequest, "recv_id"},
		{"group without group_id", func(r *SendRequest) { r.SessionType = 3; r.RecvID = "" }, wire.ReasonBadRequest, "group_id"},
		{"group with recv_id", func(r *SendRequest) { r.SessionType = 3; r.GroupID = "g" }, wire.ReasonBadRequest, "recv_id"},
		{"notification type", func(r *SendRequest) { r.MsgType = 1501 }, wire.ReasonBadRequest, "msg_type"},
		{"empty text", func(r *SendRequest) { r.Content.Text = "" }, wire.ReasonBadRequest, "content.text"},
		{"picture without image", func(r *SendRequest) { r.MsgType = 102 }, wire.ReasonBadRequest, "content.image"},
		{"too long", func(r *SendRequest) { r.Content.Text = strings.Repeat("x", 101) }, wire.ReasonBodyTooLong, ""},
		{"long image ref", func(r *SendRequest) { r.MsgType = 102; r.Content.Image = MediaRef(strings.Repeat("x", 513)) }, wire.ReasonBodyTooLong, ""},
		{"invalid custom", func(r *SendRequest) { r.MsgType = 110; r.Content.Custom = json.RawMessage(`{"a":`) }, wire.ReasonBadRequest, "content.custom"},
		{"custom ok", func(r *SendRequest) { r.MsgType = 110; r.Content.Custom = json.RawMessage(`{"a": 1}`) }, "", ""},
		{"bad mention", func(r *SendRequest) { r.AtUserIDs = []string{"b ad"} }, wire.ReasonBadRequest, "at_user_ids"},
		{"mention all", func(r *SendRequest) { r.AtUserIDs = []string{"all", "bob"} }, "", ""},
		{"invalid utf8 text", func(r *SendRequest) { r.Content.Text = "\xff" }, wire.ReasonBadRequest, "content.text"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := ok()
			c.mutate(&r)
			m, err := r.validate("alice", 100)
			if c.reason == "" {
				if err != nil {
					t.Fatalf("unexpected error %v", err)
				}
				if m.SenderID != "alice" || m.ConversationID == "" {
					t.Fatalf("message %+v", m)
				}
				return
			}
			var we *wire.Error
			if !asWire(err, &we) || we.Reason != c.reason || !strings.Contains(we.Detail, c.field) {
				t.Fatalf("error %v, want %s naming %q", err, c.reason, c.field)
			}
		})
	}
}

func TestCustomContentIsCompactedAndRoundTrips(t *testing.T) {
	r := SendRequest{ClientMsgID: "c", SessionType: 1, RecvID: "b", MsgType: 110, Content: ContentJSON{Custom: json.RawMessage("{ \"k\" : [1, 2] }")}}
	m, err := r.validate("a", 1000)
	if err != nil {
		t.Fatal(err)
	}
	if m.Content.Custom != `{"k":[1,2]}` {
		t.Fatalf("custom = %q", m.Content.Custom)
	}
	out, _ := json.Marshal(ToJSON(&m))
	if !strings.Contains(string(out), `"custom":{"k":[1,2]}`) {
		t.Fatalf("wire form %s", out)
	}
}

func TestRevokedAndFailedMessagesServeNoContent(t *testing.T) {
	m := domain.Message{ServerMsgID: "s", Seq: 3, Status: domain.StatusRevoked, Content: domain.Content{Text: "secret"}}
	j := ToJSON(&m)
	if j.Content != nil || j.Status != "revoked" || j.ServerMsgID != "s" {
		t.Fatalf("revoked = %+v", j)
	}
	m.Status = domain.StatusFailed
	if j := ToJSON(&m); j.Status != "unavailable" || j.Content != nil || j.ServerMsgID != "" || j.Seq != 3 {
		t.Fatalf("failed = %+v", j)
	}
}

func TestFillRangeAddsPlaceholdersInOrder(t *testing.T) {
	msgs := []domain.Message{{Seq: 2, Status: domain.StatusNormal}, {Seq: 5, Status: domain.StatusNormal}}
	out := fillRange(msgs, 1, 6, 100)
	want := []string{"unavailable", "normal", "unavailable", "unavailable", "normal", "unavailable"}
	if len(out) != len(want) {
		t.Fatalf("got %d entries", len(out))
	}
	for i, w := range want {
		if out[i].Seq != int64(i+1) || out[i].Status != w {
			t.Fatalf("entry %d = %+v, want seq %d %s", i, out[i], i+1, w)
		}
	}
	if out := fillRange(msgs, 1, 6, 3); len(out) != 3 || out[2].Seq != 3 {
		t.Fatalf("limit not applied: %+v", out)
	}
}

// TestPullBySeqsRefusesLongLists: over MaxPullLimit seqs is bad_request
// naming seqs, not a silent cut.
func TestPullBySeqsRefusesLongLists(t *testing.T) {
	seqs := make([]int64, MaxPullLimit+1)
	for i := range seqs {
		seqs[i] = int64(i + 1)
	}
	r := PullBySeqsRequest{ConversationID: "si_a_b", Seqs: seqs}
	err := r.Validate()
	var we *wire.Error
	if !asWire(err, &we) || we.Reason != wire.ReasonBadRequest || !strings.Contains(we.Detail, "seqs") {
		t.Fatalf("got %v, want bad_request naming seqs", err)
	}
	r.Seqs = seqs[:MaxPullLimit]
	if err := r.Validate(); err != nil {
		t.Fatalf("%d seqs: %v", MaxPullLimit, err)
	}
}

type gateFunc func(string) time.Duration

func (f gateFunc) Blocked(sender string) time.Duration { return f(sender) }

// TestBlockedSenderRefusedBeforeASeq: a sender blocked for
// repeated dead letters is refused with too_many_requests and the rest of
// the block as retry-after, before anything else is asked (the service
// here has no accepter or store: reaching them would panic); a malformed
// request stays bad_request.
func TestBlockedSenderRefusedBeforeASeq(t *testing.T) {
	s := NewService(Deps{Msg: configs.Default().Msg, DeadSenders: gateFunc(func(sender string) time.Duration {
		if sender == "olga" {
			return 42 * time.Second
		}
		return 0
	})})
	req := SendRequest{ClientMsgID: "c1", SessionType: 1, RecvID: "bob", MsgType: 101, Content: ContentJSON{Text: "hi"}}
	_, err := s.Send(context.Background(), Origin{UserID: "olga"}, req)
	var we *wire.Error
	if !asWire(err, &we) || we.Reason != wire.ReasonTooManyRequests || we.RetryAfter != 42*time.Second {
		t.Fatalf("blocked sender: %v, want too_many_requests retry after 42s", err)
	}
	req.ClientMsgID = ""
	if _, err := s.Send(context.Background(), Origin{UserID: "olga"}, req); !asWire(err, &we) || we.Reason != wire.ReasonBadRequest {
		t.Fatalf("malformed request of a blocked sender: %v, want bad_request", err)
	}
}

// asWire is the wire error a client would read for err (wire.Public);
// false for nil and for errors whose cause is hidden from clients.
func asWire(err error, we **wire.Error) bool {
	if err == nil {
		return false
	}
	w, hidden := wire.Public(err)
	*we = w
	return !hidden
}
