package cluster

import (
	"testing"
	"time"

	"github.com/nexo-im/nexo/gateway/ws"
)

// TestEnvelopeCarriesThePushedMessage: a push envelope keeps its frame's
// message tag across the bus, so the receiving instance writes the push
// audit line of each of its connections with server_msg_id,
// conversation_id and seq (issue 15 item 3).
func TestEnvelopeCarriesThePushedMessage(t *testing.T) {
	ref := ws.MsgRef{ServerMsgID: "0190-abc", ConversationID: "si_a_b", Seq: 42}
	in := envelope{kind: kindPush, users: []string{"a", "b"}, except: "c1", at: time.Now(), from: "x#1", msg: &ref, payload: []byte(`{}`)}
	out := parseEnvelope(in.message())
	if out.msg == nil || *out.msg != ref {
		t.Fatalf("msg after the bus = %+v, want %+v", out.msg, ref)
	}
	if out.kind != kindPush || len(out.users) != 2 || out.except != "c1" {
		t.Fatalf("envelope after the bus: %+v", out)
	}
	plain := envelope{kind: kindPush, users: []string{"a"}, at: time.Now(), payload: []byte(`{}`)}
	if got := parseEnvelope(plain.message()); got.msg != nil {
		t.Fatalf("untagged push got msg %+v", got.msg)
	}
}
