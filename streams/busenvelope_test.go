package streams

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/nexo-im/nexo/domain"
)

// TestEnvelopeCarriesThePushedMessage: a push envelope keeps its frame's
// message tag across the bus, so the receiving instance writes the push
// audit line of each of its connections with server_msg_id,
// conversation_id and seq.
func TestEnvelopeCarriesThePushedMessage(t *testing.T) {
	ref := domain.MsgRef{ServerMsgID: "0190-abc", ConversationID: "si_a_b", Seq: 42}
	in := BusEnvelope{Kind: "push", Users: []string{"a", "b"}, Except: "c1", At: time.Now(), From: "x#1", Msg: &ref, Payload: []byte(`{}`)}
	out := parseBusEnvelope(in.message())
	if out.Msg == nil || *out.Msg != ref {
		t.Fatalf("msg after the bus = %+v, want %+v", out.Msg, ref)
	}
	if out.Kind != "push" || len(out.Users) != 2 || out.Except != "c1" || out.From != "x#1" || out.At.UnixMilli() != in.At.UnixMilli() {
		t.Fatalf("envelope after the bus: %+v", out)
	}
	plain := BusEnvelope{Kind: "push", Users: []string{"a"}, At: time.Now(), Payload: []byte(`{}`)}
	if got := parseBusEnvelope(plain.message()); got.Msg != nil {
		t.Fatalf("untagged push got msg %+v", got.Msg)
	}
	kick := BusEnvelope{Kind: "kick", Users: []string{"a"}, Platform: 5, JTI: "j", Since: time.Unix(0, 1234567), Reason: "r", Detail: "d"}
	if got := parseBusEnvelope(kick.message()); got.Platform != 5 || got.JTI != "j" || !got.Since.Equal(kick.Since) ||
		got.Reason != "r" || got.Detail != "d" {
		t.Fatalf("session event after the bus: %+v", got)
	}
}

// TestPushesEnvelopeRoundTrip: a pushes envelope carries each item's users,
// except, message tag and frame bytes unchanged, in order; a truncated one
// is refused, not half applied.
func TestPushesEnvelopeRoundTrip(t *testing.T) {
	items := []BusPush{
		{Users: []string{"u1", "u2"}, Except: "c9", Msg: &domain.MsgRef{ServerMsgID: "s1", ConversationID: "si_u1_u2", Seq: 42}, Frame: []byte(`{"req_identifier":2001}`)},
		{Users: []string{"u3"}, Frame: []byte("not json, any bytes \x00\xff")},
		{Users: []string{"u4"}, Msg: &domain.MsgRef{ServerMsgID: "s2", ConversationID: "sg_g", Seq: -1}, Frame: nil},
	}
	b := EncodeBusPushes(items)
	got, err := DecodeBusPushes(b)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(items) {
		t.Fatalf("%d items back, want %d", len(got), len(items))
	}
	for i := range items {
		w, g := items[i], got[i]
		if !slices.Equal(w.Users, g.Users) || w.Except != g.Except || string(w.Frame) != string(g.Frame) ||
			(w.Msg == nil) != (g.Msg == nil) || w.Msg != nil && *w.Msg != *g.Msg {
			t.Fatalf("item %d: got %+v, want %+v", i, g, w)
		}
	}
	for cut := 1; cut < len(b); cut += 7 {
		// A cut exactly between items decodes the items before it.
		if _, err := DecodeBusPushes(b[:cut]); err != nil && !errors.Is(err, ErrBadPushes) {
			t.Fatalf("cut at %d: %v", cut, err)
		}
	}
	if _, err := DecodeBusPushes([]byte{0xff}); !errors.Is(err, ErrBadPushes) {
		t.Fatalf("garbage: %v, want ErrBadPushes", err)
	}
}
