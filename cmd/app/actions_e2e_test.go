package app

import (
	"fmt"
	"strings"
	"testing"

	"github.com/nexo-im/nexo/domain"
)

// noticesOf returns the 2001 frames of msg_type t.
func noticesOf(f []frame, t float64) []frame {
	var out []frame
	for _, x := range f {
		if x.field("msg_type") == t {
			out = append(out, x)
		}
	}
	return out
}

// TestMessageActionsEndToEnd: the wired server serves every action over
// HTTP and WebSocket, announces each to the conversation, and shows it in
// pulls; hostile inputs get their reasons.
func TestMessageActionsEndToEnd(t *testing.T) {
	t.Parallel()
	base := syncApp(t, nil)
	tokA, tokB := user(t, base, "ann"), user(t, base, "ben")
	a, b := dial(t, base, "ann", tokA), dial(t, base, "ben", tokB)
	conv := domain.SingleConversationID("ann", "ben")
	sent := a.send("ben", "x1", "helo")
	if sent.ErrCode != 0 {
		t.Fatalf("send: %s", sent.Data)
	}
	seq := sent.field("seq").(float64)
	waitNewest(t, base, tokB, conv, seq)

	// Edit: someone else's message, then the sender over HTTP and WS.
	body := fmt.Sprintf(`{"conversation_id":%q,"seq":%d,"content":{"text":"hello"}}`, conv, int64(seq))
	if code, env := call(t, "POST", base+"/msg/edit", body, tokB); code != 403 || env["err_msg"] != "edit_not_allowed" {
		t.Fatalf("ben edits ann's message: %d %v", code, env)
	}
	if code, env := call(t, "POST", base+"/msg/edit", body, tokA); code != 200 || envData(env)["edit_version"] != 1.0 {
		t.Fatalf("edit: %d %v", code, env)
	}
	r := a.request(1106, map[string]any{"conversation_id": conv, "seq": seq, "content": map[string]any{"text": "hello!"}})
	if r.ErrCode != 0 || r.field("edit_version") != 2.0 {
		t.Fatalf("1106: %+v %s", r, r.Data)
	}
	b.waitPushes(2001, "two edit notices", func(f []frame) bool { return len(noticesOf(f, 1601)) == 2 })
	a.waitPushes(2001, "two edit notices on the editor's device", func(f []frame) bool { return len(noticesOf(f, 1601)) == 2 })
	code, env := call(t, "GET", fmt.Sprintf("%s/msg/edits?conversation_id=%s&seq=%d", base, conv, int64(seq)), "", tokB)
	if vs, _ := envData(env)["versions"].([]any); code != 200 || len(vs) != 2 {
		t.Fatalf("edits: %d %v", code, env)
	}

	// Reactions: a 10 KiB "emoji", then a real one over WS.
	huge := fmt.Sprintf(`{"conversation_id":%q,"seq":%d,"emoji":%q,"op":"add"}`, conv, int64(seq), strings.Repeat("😀", 2560))
	if code, env := call(t, "POST", base+"/msg/reaction", huge, tokB); code != 400 || env["err_msg"] != "bad_emoji" {
		t.Fatalf("10 KiB emoji: %d %v", code, env)
	}
	if r := b.request(1109, map[string]any{"conversation_id": conv, "seq": seq, "emoji": "👍", "op": "add"}); r.ErrCode != 0 || r.field("count") != 1.0 {
		t.Fatalf("1109: %+v %s", r, r.Data)
	}
	a.waitPushes(2001, "the reaction notice", func(f []frame) bool { return len(noticesOf(f, 1602)) == 1 })

	// A quoted reply.
	q := b.request(1003, map[string]any{"client_msg_id": "q1", "session_type": 1, "recv_id": "ann", "msg_type": 101,
		"content": map[string]any{"text": "yes"}, "quote": map[string]any{"seq": seq}})
	if q.ErrCode != 0 {
		t.Fatalf("quoted send: %s", q.Data)
	}
	if q := b.request(1003, map[string]any{"client_msg_id": "q2", "session_type": 1, "recv_id": "ann", "msg_type": 101,
		"content": map[string]any{"text": "?"}, "quote": map[string]any{"seq": 999}}); q.ErrMsg != "quote_unavailable" {
		t.Fatalf("quote of a seq never issued: %+v %s", q, q.Data)
	}
	waitNewest(t, base, tokA, conv, q.field("seq").(float64))
	code, env = call(t, "GET", fmt.Sprintf("%s/msg/pull?conversation_id=%s&begin_seq=%d", base, conv, int64(seq)), "", tokA)
	msgs, _ := envData(env)["messages"].([]any)
	if code != 200 || len(msgs) == 0 {
		t.Fatalf("pull: %d %v", code, env)
	}
	first := msgs[0].(map[string]any)
	reactions, _ := first["reactions"].([]any)
	if first["edit_version"] != 2.0 || first["content"].(map[string]any)["text"] != "hello!" || len(reactions) != 1 {
		t.Fatalf("pulled message %v", first)
	}
	var reply map[string]any
	for _, m := range msgs {
		if m.(map[string]any)["client_msg_id"] == "q1" {
			reply = m.(map[string]any)
		}
	}
	if quote, _ := reply["quote"].(map[string]any); quote == nil || quote["preview"] != "hello!" || quote["sender_id"] != "ann" {
		t.Fatalf("reply %v", reply)
	}

	// Delete: beyond max_seq; for self; read by.
	if code, env := call(t, "POST", base+"/msg/delete", fmt.Sprintf(`{"conversation_id":%q,"seqs":[99999],"scope":"everyone"}`, conv), tokA); code != 400 || env["err_msg"] != "bad_seq" {
		t.Fatalf("delete beyond max_seq: %d %v", code, env)
	}
	if r := b.request(1108, map[string]any{"conversation_id": conv, "seqs": []any{seq}, "scope": "self"}); r.ErrCode != 0 {
		t.Fatalf("1108: %s", r.Data)
	}
	_, env = call(t, "POST", base+"/msg/pull_by_seqs", fmt.Sprintf(`{"conversation_id":%q,"seqs":[%d]}`, conv, int64(seq)), tokB)
	if m := envData(env)["messages"].([]any)[0].(map[string]any); m["status"] != "deleted" {
		t.Fatalf("ben's pull after delete for self: %v", m)
	}
	_, env = call(t, "POST", base+"/msg/pull_by_seqs", fmt.Sprintf(`{"conversation_id":%q,"seqs":[%d]}`, conv, int64(seq)), tokA)
	if m := envData(env)["messages"].([]any)[0].(map[string]any); m["status"] != "normal" {
		t.Fatalf("ann lost the message ben deleted for himself: %v", m)
	}
	code, env = call(t, "GET", fmt.Sprintf("%s/msg/read_by?conversation_id=%s&seq=%d", base, conv, int64(seq)), "", tokA)
	if code != 200 || envData(env)["member_count"] != 1.0 {
		t.Fatalf("read_by: %d %v", code, env)
	}
}
