package streams

import (
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/nexo-im/nexo/domain"
)

// Every field survives the stream body; text that is not valid UTF-8
// arrives as U+FFFD (as encoding/json wrote it), never as a broken entry.
func TestEncodeMessageRoundTrip(t *testing.T) {
	for _, text := range []string{"", "plain", "<b>&</b> \"q\" \\ \n\t", "😀 中文 \u2028", "bad \xff utf-8"} {
		m := domain.Message{ServerMsgID: "s1", ClientMsgID: "c1", ConversationID: "sg_g1", SenderID: "alice",
			GroupID: "g1", SessionType: domain.SessionGroup, MsgType: domain.MsgText, SendAt: 1763900000000, Seq: 3,
			AtUserIDs: []string{"bob", "all"}, Status: domain.StatusNormal,
			Content: domain.Content{Text: text, Image: "i", Video: "v", Audio: "a", File: "f", Custom: `{"k":[1,"x"]}`}}
		x := redis.XMessage{ID: "1-0", Values: map[string]any{fieldSeq: "3", fieldRoute: "s", fieldMsg: EncodeMessage(&m)}}
		got, err := Decode(x)
		if err != nil {
			t.Fatalf("%q: %v", text, err)
		}
		want := m
		if text == "bad \xff utf-8" {
			want.Content.Text = "bad \ufffd utf-8"
		}
		if got.Msg.Content != want.Content || got.Msg.ServerMsgID != want.ServerMsgID || got.Msg.GroupID != want.GroupID ||
			got.Msg.SendAt != want.SendAt || len(got.Msg.AtUserIDs) != 2 || got.Msg.Seq != 3 || got.Msg.MsgType != want.MsgType {
			t.Errorf("%q: got %+v, want %+v", text, got.Msg, want)
		}
	}
}

// A body that is not the stream form is an error (the entry is
// dead-lettered), never a half-filled message.
func TestDecodeRefusesMalformedBodies(t *testing.T) {
	for _, body := range []string{"", "{", "null", `{"server_msg_id":1}`, `{"server_msg_id":"s","conversation_id":"c"}`, "[]"} {
		x := redis.XMessage{ID: "1-0", Values: map[string]any{fieldSeq: "3", fieldRoute: "s", fieldMsg: body}}
		if got, err := Decode(x); err == nil {
			t.Errorf("body %q decoded as %+v", body, got.Msg)
		}
	}
}

// TestInstanceIDTravelsButIsOptional: an entry names the instance that
// accepted it, a forwarded entry and a dead letter keep it, and an entry
// written before the field existed still decodes.
func TestInstanceIDTravelsButIsOptional(t *testing.T) {
	m := domain.Message{ServerMsgID: "s1", ClientMsgID: "c1", ConversationID: "si_a_b", SenderID: "a", SendAt: 1}
	old := redis.XMessage{ID: "1-0", Values: map[string]any{fieldSeq: "3", fieldRoute: "s", fieldMsg: EncodeMessage(&m)}}
	e, err := Decode(old)
	if err != nil || e.InstanceID != "" {
		t.Fatalf("entry without instance_id: %+v, %v", e, err)
	}
	if args := entryArgs(&e); len(args) != 10 {
		t.Fatalf("forwarding an entry without instance_id wrote %d args: %v", len(args), args)
	}

	old.Values[fieldInstance] = "web1-8080"
	e, err = Decode(old)
	if err != nil || e.InstanceID != "web1-8080" {
		t.Fatalf("entry with instance_id: %+v, %v", e, err)
	}
	args := entryArgs(&e)
	if len(args) != 12 || args[10] != fieldInstance || args[11] != "web1-8080" {
		t.Fatalf("forwarded entry args %v", args)
	}
	if d := CapDeadFields(old.Values, fieldMsg, 64); d[fieldInstance] != "web1-8080" {
		t.Fatalf("dead letter fields %v", d)
	}
}
