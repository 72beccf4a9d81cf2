package app

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/nexo-im/nexo/configs"
	"github.com/nexo-im/nexo/domain"
	"github.com/nexo-im/nexo/gateway/ws"
)

// syncApp starts the app on real MariaDB and Redis for the sync tests
// (gateway/state), with fast cursor flushes. It skips until cmd/app
// serves the sync routes.
func syncApp(t *testing.T, tweak func(*configs.Config)) string {
	t.Helper()
	cfg := realConfig(t)
	cfg.Sync.CursorFlushInterval = 5 * time.Millisecond
	cfg.Sync.ResendLockTTL = 0
	if tweak != nil {
		tweak(&cfg)
	}
	_, base := startAppValue(t, cfg)
	return base
}

// data decodes an envelope's data.
func envData(env map[string]any) map[string]any {
	d, _ := env["data"].(map[string]any)
	return d
}

// ackFrames returns the 2101 frames of ack_type typ.
func ackFrames(f []frame, typ string) []frame {
	var out []frame
	for _, x := range f {
		if x.field("ack_type") == typ {
			out = append(out, x)
		}
	}
	return out
}

// TestSyncCursorsAndReceiptsEndToEnd: over WebSocket, bob's delivered and
// read ACKs move his cursors (1001, 1006, the list), alice gets receipts,
// and the refusals come with their reasons.
func TestSyncCursorsAndReceiptsEndToEnd(t *testing.T) {
	t.Parallel()
	base := syncApp(t, nil)
	tokA, tokB, tokC := user(t, base, "alice"), user(t, base, "bob"), user(t, base, "carol")
	a, b, c := dial(t, base, "alice", tokA), dial(t, base, "bob", tokB), dial(t, base, "carol", tokC)
	conv := domain.SingleConversationID("alice", "bob")
	for i := 1; i <= 3; i++ {
		if r := a.send("bob", fmt.Sprint("m", i), "hi"); r.ErrCode != 0 {
			t.Fatalf("send: %s", r.Data)
		}
	}
	b.waitPushes(2001, "three messages", func(f []frame) bool { return len(f) >= 3 })

	if r := b.request(1101, map[string]any{"ack_type": "delivered", "conversation_id": conv, "seq": 3}); r.ErrCode != 0 || r.field("seq") != 3.0 {
		t.Fatalf("1101 delivered: %+v %s", r, r.Data)
	}
	if r := b.request(1101, map[string]any{"ack_type": "ack_read", "conversation_id": conv, "seq": 2}); r.ErrCode != 0 || r.field("ack_type") != "read" {
		t.Fatalf("1101 ack_read: %+v %s", r, r.Data)
	}
	got := a.waitPushes(2101, "delivered and read receipts", func(f []frame) bool {
		return len(ackFrames(f, "delivered")) >= 1 && len(ackFrames(f, "read")) >= 1
	})
	if d := ackFrames(got, "delivered")[0]; d.field("seq") != 3.0 || d.field("user_id") != "bob" || d.field("conversation_id") != conv {
		t.Fatalf("delivered receipt %s", d.Data)
	}
	if r := ackFrames(got, "read")[0]; r.field("seq") != 2.0 || r.field("user_id") != "bob" {
		t.Fatalf("read receipt %s", r.Data)
	}

	newest := b.request(1001, map[string]any{})
	seqs, _ := newest.field("conversations").(map[string]any)
	mine, _ := seqs[conv].(map[string]any)
	if newest.ErrCode != 0 || mine["max_seq"] != 3.0 || mine["delivered_seq"] != 3.0 || mine["read_seq"] != 2.0 || mine["min_seq"] != 1.0 {
		t.Fatalf("1001: %s", newest.Data)
	}
	if r := b.request(1006, map[string]any{"conversation_id": conv}); r.field("max_seq") != 3.0 || r.field("read_seq") != 2.0 {
		t.Fatalf("1006: %s", r.Data)
	}
	code, env := call(t, "GET", base+"/msg/newest_seq?conversation_ids="+conv, "", tokB)
	if m, _ := envData(env)["conversations"].(map[string]any); code != 200 || m[conv] == nil {
		t.Fatalf("GET /msg/newest_seq: %d %v", code, env)
	}
	code, env = call(t, "POST", base+"/msg/mark_read", fmt.Sprintf(`{"conversation_id":%q,"seq":3}`, conv), tokB)
	if code != 200 || envData(env)["ack_type"] != "read" {
		t.Fatalf("mark_read: %d %v", code, env)
	}
	code, env = call(t, "GET", base+"/conversation/list", "", tokB)
	list, _ := envData(env)["conversations"].([]any)
	if code != 200 || len(list) != 1 || list[0].(map[string]any)["unread_count"] != 0.0 || list[0].(map[string]any)["read_seq"] != 3.0 {
		t.Fatalf("bob's list after mark_read: %d %v", code, env)
	}

	for _, tc := range []struct {
		name   string
		who    *wsClient
		data   map[string]any
		reason string
	}{
		{"above the max", b, map[string]any{"ack_type": "read", "conversation_id": conv, "seq": 99}, "bad_seq"},
		{"not a party", c, map[string]any{"ack_type": "read", "conversation_id": conv, "seq": 1}, "not_conversation_member"},
		{"unknown field", b, map[string]any{"ack_type": "read", "conversation_id": conv, "seq": 1, "x": 1}, "bad_request"},
		{"bad ack_type", b, map[string]any{"ack_type": "seen", "conversation_id": conv, "seq": 1}, "bad_request"},
	} {
		if r := tc.who.request(1101, tc.data); r.ErrMsg != tc.reason {
			t.Errorf("%s: %+v %s", tc.name, r, r.Data)
		}
	}
	if r := c.request(1001, map[string]any{"conversation_ids": []string{conv}}); r.ErrMsg != "not_conversation_member" {
		t.Errorf("outsider 1001: %s", r.Data)
	}
	if code, env := call(t, "POST", base+"/msg/mark_read", fmt.Sprintf(`{"conversation_id":%q,"seq":1}`, conv), tokC); code != 403 {
		t.Errorf("outsider mark_read: %d %v", code, env)
	}
}

// TestOfflineResendEndToEnd: bob goes offline; on reconnect he gets
// exactly what he missed, in order, as ordinary 2001 pushes, capped, with
// a 2102 for the rest.
func TestOfflineResendEndToEnd(t *testing.T) {
	t.Parallel()
	base := syncApp(t, func(c *configs.Config) { c.Sync.ResendSingleMax = 4 })
	tokA, tokB := user(t, base, "ann"), user(t, base, "ben")
	a := dial(t, base, "ann", tokA)
	b := dial(t, base, "ben", tokB)
	conv := domain.SingleConversationID("ann", "ben")
	a.send("ben", "x1", "before")
	b.waitPushes(2001, "the first message", func(f []frame) bool { return len(f) >= 1 })
	if r := b.request(1101, map[string]any{"ack_type": "delivered", "conversation_id": conv, "seq": 1}); r.ErrCode != 0 {
		t.Fatal(r.Data)
	}
	_ = b.conn.Close()
	<-b.closed
	// Ann's second device gets every message once the deliver stage is
	// through with it: then no live push can reach ben's new connection.
	code, env := call(t, "POST", base+"/auth/login", `{"user_id":"ann","password":"plum-tart-9","platform_id":1}`, "")
	if code != 200 {
		t.Fatalf("second login: %d %v", code, env)
	}
	a2 := dialPlatform(t, base, "ann", dataField(env, "token"), 1)
	for i := 2; i <= 7; i++ {
		a.send("ben", fmt.Sprint("x", i), "while away")
	}
	a2.waitPushes(2001, "every message delivered", func(f []frame) bool { return len(f) >= 6 })
	b2 := dial(t, base, "ben", tokB)
	got := b2.waitPushes(2001, "the resend", func(f []frame) bool { return len(f) >= 4 })
	for i, f := range got {
		if f.field("seq") != float64(i+2) || f.field("conversation_id") != conv {
			t.Fatalf("resent #%d: %s", i, f.Data)
		}
	}
	sum := b2.waitPushes(2102, "the summary", func(f []frame) bool { return len(f) >= 1 })
	if sum[0].field("conversation_id") != conv || sum[0].field("max_seq") != 7.0 || len(got) != 4 {
		t.Fatalf("summary %s after %d messages", sum[0].Data, len(got))
	}
}

// waitNewest waits until the caller's newest seq of conv reaches seq
// (polling the API with a deadline).
func waitNewest(t *testing.T, base, token, conv string, seq float64) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		_, env := call(t, "GET", base+"/msg/newest_seq?conversation_ids="+conv, "", token)
		m, _ := envData(env)["conversations"].(map[string]any)
		if c, _ := m[conv].(map[string]any); c != nil && c["max_seq"] == seq {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("newest seq of %s never reached %v: %v", conv, seq, env)
		}
		time.Sleep(10 * time.Millisecond) // polling the API with a deadline
	}
}

// TestConversationsAndRecallEndToEnd: the HTTP conversation API, recall
// over HTTP and WS with its 2101 and notification, and group mentions,
// unread mention counts and read receipts.
func TestConversationsAndRecallEndToEnd(t *testing.T) {
	t.Parallel()
	// The per-reader group receipts an operator may still turn on.
	base := syncApp(t, func(c *configs.Config) { c.Sync.GroupReceiptMaxMembers = 200 })
	tokA, tokB, tokC := user(t, base, "amy"), user(t, base, "bo"), user(t, base, "cy")
	a, b, c := dial(t, base, "amy", tokA), dial(t, base, "bo", tokB), dial(t, base, "cy", tokC)
	ab := domain.SingleConversationID("amy", "bo")
	first := a.send("bo", "r1", "oops")
	a.send("bo", "r2", "fine")

	code, env := call(t, "POST", base+"/msg/revoke", fmt.Sprintf(`{"conversation_id":%q,"seq":1}`, ab), tokB)
	if code != 403 || env["err_msg"] != "revoke_not_allowed" {
		t.Fatalf("bo recalls amy's message: %d %v", code, env)
	}
	r := a.request(1102, map[string]any{"conversation_id": ab, "seq": first.field("seq")})
	if r.ErrCode != 0 || r.field("ack_type") != "revoked" || r.field("seq") != 1.0 {
		t.Fatalf("1102: %+v %s", r, r.Data)
	}
	a.waitPushes(2101, "the revoked ACK", func(f []frame) bool { return len(ackFrames(f, "revoked")) == 1 })
	notice := b.waitPushes(2001, "the revoke notice", func(f []frame) bool {
		for _, x := range f {
			if x.field("msg_type") == 1600.0 {
				return true
			}
		}
		return false
	})
	for _, x := range notice {
		if x.field("msg_type") == 1600.0 {
			content, _ := x.field("content").(map[string]any)
			var n map[string]any
			raw, _ := json.Marshal(content["custom"])
			_ = json.Unmarshal(raw, &n)
			if n["seq"] != 1.0 || n["revoker_id"] != "amy" || x.field("seq") != 3.0 {
				t.Fatalf("notice %s", x.Data)
			}
		}
	}
	waitNewest(t, base, tokB, ab, 3) // the notice is saved
	code, env = call(t, "GET", base+"/msg/pull?conversation_id="+ab+"&begin_seq=1", "", tokB)
	msgs, _ := envData(env)["messages"].([]any)
	if code != 200 || len(msgs) != 3 || msgs[0].(map[string]any)["status"] != "revoked" || msgs[0].(map[string]any)["content"] != nil {
		t.Fatalf("pull after recall: %d %v", code, env)
	}
	code, env = call(t, "POST", base+"/msg/revoke", fmt.Sprintf(`{"conversation_id":%q,"seq":9}`, ab), tokA)
	if code != 404 || env["err_msg"] != "message_not_found" {
		t.Fatalf("recall of a seq never issued: %d %v", code, env)
	}

	// Settings and delete.
	code, env = call(t, "PUT", base+"/conversation/update", fmt.Sprintf(`{"conversation_id":%q,"is_pinned":true}`, ab), tokB)
	if code != 200 || envData(env)["is_pinned"] != true || envData(env)["peer_user_id"] != "amy" {
		t.Fatalf("update: %d %v", code, env)
	}
	code, env = call(t, "POST", base+"/conversation/delete", fmt.Sprintf(`{"conversation_id":%q}`, ab), tokB)
	if code != 200 {
		t.Fatalf("delete: %d %v", code, env)
	}
	if _, env = call(t, "GET", base+"/conversation/list", "", tokB); envData(env)["total"] != 0.0 {
		t.Fatalf("bo's list after delete: %v", env)
	}
	if _, env = call(t, "GET", base+"/conversation/list", "", tokA); envData(env)["total"] != 1.0 {
		t.Fatalf("amy's list is unaffected: %v", env)
	}
	// Integer query parameters: the first that is not an integer is named.
	for _, q := range []struct{ path, field string }{
		{"/conversation/list?offset=x&limit=y", "offset"},
		{"/conversation/list?limit=1.5", "limit"},
		{"/msg/newest_seq?limit=ten", "limit"},
	} {
		code, env := call(t, "GET", base+q.path, "", tokA)
		if detail, _ := envData(env)["detail"].(string); code != 400 || env["err_msg"] != "bad_request" || detail != q.field+" must be an integer" {
			t.Errorf("GET %s: %d %v", q.path, code, env)
		}
	}

	// A group: @all by a member is refused, by the owner it counts for
	// everyone; reading sends receipts to the senders.
	code, env = call(t, "POST", base+"/group/create", `{"name":"g","member_ids":["bo","cy"]}`, tokA)
	gid := dataField(env, "group_id")
	if code != 200 {
		t.Fatalf("create group: %d %v", code, env)
	}
	gconv := domain.GroupConversationID(gid)
	groupSend := func(w *wsClient, id string, at []string) frame {
		return w.request(1003, map[string]any{"client_msg_id": id, "session_type": 3, "group_id": gid, "msg_type": 101,
			"content": map[string]any{"text": "team"}, "at_user_ids": at})
	}
	if r := groupSend(b, "g1", []string{"all"}); r.ErrMsg != "forbidden" {
		t.Fatalf("member @all: %s", r.Data)
	}
	if r := groupSend(b, "g2", []string{"nobody"}); r.ErrMsg != "bad_request" {
		t.Fatalf("@non-member: %s", r.Data)
	}
	s1 := groupSend(a, "g3", []string{"all"})
	s2 := groupSend(b, "g4", []string{"cy"})
	if s1.ErrCode != 0 || s2.ErrCode != 0 {
		t.Fatalf("group sends: %s %s", s1.Data, s2.Data)
	}
	waitNewest(t, base, tokC, gconv, s2.field("seq").(float64))
	_, env = call(t, "GET", base+"/conversation/list", "", tokC)
	var entry map[string]any
	for _, x := range envData(env)["conversations"].([]any) {
		if x.(map[string]any)["conversation_id"] == gconv {
			entry = x.(map[string]any)
		}
	}
	if entry == nil || entry["unread_count"] != 2.0 || entry["unread_mention_count"] != 2.0 || entry["has_unread_mention"] != true ||
		entry["group_id"] != gid || entry["conversation_type"] != 3.0 {
		t.Fatalf("cy's group entry: %v", entry)
	}
	if r := c.request(1101, map[string]any{"ack_type": "read", "conversation_id": gconv, "seq": s2.field("seq")}); r.ErrCode != 0 {
		t.Fatal(r.Data)
	}
	for _, w := range []*wsClient{a, b} {
		w.waitPushes(2101, "cy's read receipt", func(f []frame) bool {
			for _, x := range ackFrames(f, "read") {
				if x.field("conversation_id") == gconv && x.field("user_id") == "cy" {
					return true
				}
			}
			return false
		})
	}
}

// TestResendNeverOverflowsTheSendQueue: a resend far larger than
// ws.send_queue reaches the client whole (paced on the connection's queue
// when *ws.Conn reports it) or, unpaced, as much as fits plus a 2102 for
// the rest — and the connection is never closed as a slow consumer.
func TestResendNeverOverflowsTheSendQueue(t *testing.T) {
	t.Parallel()
	base := syncApp(t, func(c *configs.Config) {
		c.WS.SendQueue, c.WS.HighWater = 32, 24
		// Deliver first: once saved, a message has been pushed, so no
		// live push can reach tom's connection after it opens.
		c.TwoPhase.DeliverBeforeSaved = true
	})
	tokA, tokB := user(t, base, "sam"), user(t, base, "tom")
	conv := domain.SingleConversationID("sam", "tom")
	const n = 150
	for i := 1; i <= n; i++ { // over HTTP: sam has no connection to overflow with ACK(saved) pushes
		body := fmt.Sprintf(`{"client_msg_id":"q%d","session_type":1,"recv_id":"tom","msg_type":101,"content":{"text":"queued"}}`, i)
		if code, env := call(t, "POST", base+"/msg/send", body, tokA); code != 200 {
			t.Fatalf("send %d: %d %v", i, code, env)
		}
	}
	waitNewest(t, base, tokA, conv, n)
	b := dial(t, base, "tom", tokB)
	_, paced := any((*ws.Conn)(nil)).(interface{ Pending() int })
	if paced {
		got := b.waitPushes(2001, "every missed message", func(f []frame) bool { return len(f) >= n })
		for i, f := range got {
			if f.field("seq") != float64(i+1) {
				t.Fatalf("resent #%d: %s", i, f.Data)
			}
		}
	} else {
		sum := b.waitPushes(2102, "the summary", func(f []frame) bool { return len(f) >= 1 })
		if sum[0].field("max_seq") != float64(n) {
			t.Fatalf("summary %s", sum[0].Data)
		}
	}
	// Still connected: a request is answered.
	if r := b.request(1006, map[string]any{"conversation_id": conv}); r.ErrCode != 0 || r.field("max_seq") != float64(n) {
		t.Fatalf("1006 after the resend: %s", r.Data)
	}
}
