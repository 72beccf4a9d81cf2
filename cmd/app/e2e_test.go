package app

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/nexo-im/nexo/configs"
	"github.com/nexo-im/nexo/domain"
	"github.com/nexo-im/nexo/store/storetest"
	"github.com/nexo-im/nexo/streams"
)

// TestSingleChatEndToEnd: A sends to B over WebSocket. A gets its ACK and
// (two-phase) ACK(saved), B and A's other device get the pushes in seq
// order, the sending connection gets no push of its own message, and a
// pull returns what was saved — under every pipeline mode.
func TestSingleChatEndToEnd(t *testing.T) {
	modes := []struct {
		name string
		tp   configs.TwoPhase
		ack  string
	}{
		{"save_first", configs.TwoPhase{Enabled: true, FailOpen: true}, "accepted"},
		{"deliver_first", configs.TwoPhase{Enabled: true, DeliverBeforeSaved: true, FailOpen: true}, "accepted"},
		{"two_phase_off", configs.TwoPhase{Enabled: false, FailOpen: true}, "saved"},
	}
	for _, mode := range modes {
		t.Run(mode.name, func(t *testing.T) {
			t.Parallel()
			cfg := realConfig(t)
			cfg.TwoPhase = mode.tp
			cfg.TwoPhase.IdempotencyTTL = configs.Default().TwoPhase.IdempotencyTTL
			base, _, _ := startApp(t, cfg)
			tokA, tokB := user(t, base, "alice"), user(t, base, "bob")
			a, b := dial(t, base, "alice", tokA), dial(t, base, "bob", tokB)
			// A's second device (another platform) receives A's own messages.
			code, env := call(t, "POST", base+"/auth/login", `{"user_id":"alice","password":"plum-tart-9","platform_id":1}`, "")
			if code != 200 {
				t.Fatalf("second login: %d %v", code, env)
			}
			a2 := dialPlatform(t, base, "alice", dataField(env, "token"), 1)

			const n = 5
			conv := domain.SingleConversationID("alice", "bob")
			for i := 1; i <= n; i++ {
				r := a.send("bob", fmt.Sprint("m", i), fmt.Sprint("hello ", i))
				if r.ErrCode != 0 || r.field("ack_type") != mode.ack || r.field("seq") != float64(i) ||
					r.field("conversation_id") != conv || r.field("server_msg_id") == "" || r.field("client_msg_id") != fmt.Sprint("m", i) {
					t.Fatalf("ACK of m%d = %+v %s", i, r, r.Data)
				}
			}
			if mode.tp.Enabled {
				saved := a.waitPushes(2101, "ACK(saved) of every message", func(f []frame) bool { return len(f) >= n })
				for i, f := range saved[:n] {
					if f.field("ack_type") != "saved" || f.field("seq") != float64(i+1) || f.field("client_msg_id") != fmt.Sprint("m", i+1) {
						t.Errorf("ACK(saved) %d = %s", i, f.Data)
					}
				}
			}
			for _, c := range []*wsClient{b, a2} {
				got := c.waitPushes(2001, "every message pushed", func(f []frame) bool { return len(f) >= n })
				for i, f := range got[:n] {
					if f.field("seq") != float64(i+1) || f.field("sender_id") != "alice" || f.field("status") != "normal" {
						t.Errorf("%s push %d = %s", c.userID, i, f.Data)
					}
				}
			}
			a.mu.Lock()
			own := len(a.pushes[2001])
			a.mu.Unlock()
			if own != 0 {
				t.Errorf("the sending connection got %d pushes of its own messages", own)
			}
			pull := b.request(1005, map[string]any{"conversation_id": conv, "begin_seq": 1})
			msgs, _ := pull.field("messages").([]any)
			if pull.ErrCode != 0 || len(msgs) != n || pull.field("max_seq") != float64(n) {
				t.Fatalf("pull = %+v %s", pull, pull.Data)
			}
			first := msgs[0].(map[string]any)
			content, _ := first["content"].(map[string]any)
			if first["client_msg_id"] != "m1" || content["text"] != "hello 1" {
				t.Errorf("pulled %v", first)
			}
			// A third party may not read it.
			tokC := user(t, base, "carol")
			code, env = call(t, "GET", base+"/msg/pull?conversation_id="+conv, "", tokC)
			if code != 403 || env["err_msg"] != "not_conversation_member" {
				t.Errorf("outsider pull: %d %v", code, env)
			}
		})
	}
}

// TestRetriesNeverCreateASecondMessage: the same client_msg_id before the
// save, after it, and after its idempotency record expired resolves to one
// message.
func TestRetriesNeverCreateASecondMessage(t *testing.T) {
	t.Parallel()
	cfg := realConfig(t)
	// The retry after expiry is answered from the database's duplicate
	// check: wait for it however long a busy machine takes (the default
	// lets a send go on after 10 ms, which this test is not about).
	cfg.TwoPhase.DuplicateCheckWait = 0
	base, _, _ := startApp(t, cfg)
	a := dial(t, base, "ann", user(t, base, "ann"))
	user(t, base, "ben")
	first := a.send("ben", "retry-1", "once")
	again := a.send("ben", "retry-1", "once") // at once: probably before the save
	if again.field("seq") != first.field("seq") || again.field("server_msg_id") != first.field("server_msg_id") {
		t.Fatalf("retry before save: %s vs %s", again.Data, first.Data)
	}
	a.waitPushes(2101, "ACK(saved)", func(f []frame) bool { return len(f) >= 1 })
	after := a.send("ben", "retry-1", "once")
	if after.field("ack_type") != "saved" || after.field("seq") != first.field("seq") || after.field("server_msg_id") != first.field("server_msg_id") {
		t.Fatalf("retry after save: %s", after.Data)
	}

	// The idempotency record expires (deleted here): the retry is answered
	// from the database with the original's ACK(saved) and seq, and no new
	// seq is issued (issue 15 item 2).
	rdb, _ := storetest.Redis(t)
	keys := streams.NewKeys(cfg.Redis.KeyPrefix, cfg.Streams.Shards)
	conv := domain.SingleConversationID("ann", "ben")
	if err := rdb.Del(context.Background(), keys.Idem(keys.Shard(conv), "ann", "retry-1")).Err(); err != nil {
		t.Fatal(err)
	}
	late := a.send("ben", "retry-1", "once")
	if late.field("ack_type") != "saved" || late.field("seq") != first.field("seq") || late.field("server_msg_id") != first.field("server_msg_id") {
		t.Fatalf("retry after expiry: %s, want the original %s as saved", late.Data, first.Data)
	}
	// A further retry answers the original again.
	if again := a.send("ben", "retry-1", "once"); again.field("seq") != first.field("seq") || again.field("ack_type") != "saved" {
		t.Fatalf("retry after resolution: %s", again.Data)
	}
	if n := readableMessages(t, base, conv, a.token); n != 1 {
		t.Fatalf("pull after retries: %d readable messages, want 1", n)
	}
}

// TestRecentUUIDv7RetriesNeedNoDatabase: sends and retries of a recent
// UUIDv7 client_msg_id (the SDK's) never ask the database — the accept
// step's Redis record answers the retries with the original — and when
// that record is gone anyway (deleted here, as a Redis that lost data
// without changing servers would), the retry gets a new seq at accept and
// the save stage resolves it to the original: its ACK(saved) names the
// original and one message is readable (docs/pipeline.md, "Idempotency").
func TestRecentUUIDv7RetriesNeedNoDatabase(t *testing.T) {
	t.Parallel()
	cfg := realConfig(t)
	cfg.Metrics.Token = "metrics-token-0123456789"
	base, _, _ := startApp(t, cfg)
	a := dial(t, base, "ann", user(t, base, "ann"))
	user(t, base, "ben")
	u, err := uuid.NewV7()
	if err != nil {
		t.Fatal(err)
	}
	id := u.String()
	first := a.send("ben", id, "once")
	if again := a.send("ben", id, "once"); again.field("seq") != first.field("seq") || again.field("server_msg_id") != first.field("server_msg_id") {
		t.Fatalf("retry before save: %s vs %s", again.Data, first.Data)
	}
	a.waitPushes(2101, "ACK(saved)", func(f []frame) bool { return len(f) >= 1 })
	if after := a.send("ben", id, "once"); after.field("ack_type") != "saved" || after.field("seq") != first.field("seq") {
		t.Fatalf("retry after save: %s", after.Data)
	}
	code, text := get(t, base+"/metrics", cfg.Metrics.Token)
	if code != 200 {
		t.Fatalf("/metrics: %d", code)
	}
	if n := metricValue(text, "nexo_send_duplicate_checks_skipped_total"); n != 3 {
		t.Fatalf("duplicate lookups skipped: %v, want 3", n)
	}
	if n := metricValue(text, "nexo_send_duplicates_in_database_total"); n != 0 {
		t.Fatalf("duplicates found by the lookup: %v, want none asked", n)
	}

	rdb, _ := storetest.Redis(t)
	keys := streams.NewKeys(cfg.Redis.KeyPrefix, cfg.Streams.Shards)
	conv := domain.SingleConversationID("ann", "ben")
	if err := rdb.Del(context.Background(), keys.Idem(keys.Shard(conv), "ann", id)).Err(); err != nil {
		t.Fatal(err)
	}
	late := a.send("ben", id, "once")
	if late.field("seq") == first.field("seq") {
		t.Fatalf("retry without its record: %s, want a new seq at accept", late.Data)
	}
	a.waitPushes(2101, "the late retry's ACK(saved)", func(f []frame) bool {
		return len(f) >= 2 && f[len(f)-1].field("seq") == first.field("seq") && f[len(f)-1].field("server_msg_id") == first.field("server_msg_id")
	})
	if n := readableMessages(t, base, conv, a.token); n != 1 {
		t.Fatalf("pull after retries: %d readable messages, want 1", n)
	}
}

// readableMessages pulls conv from its first seq as token's user and
// counts the messages with status normal (not placeholders of gaps).
func readableMessages(t *testing.T, base, conv, token string) int {
	t.Helper()
	code, env := call(t, "GET", base+"/msg/pull?conversation_id="+conv+"&begin_seq=1", "", token)
	if code != 200 {
		t.Fatalf("pull %s: %d %v", conv, code, env)
	}
	data, _ := env["data"].(map[string]any)
	msgs, _ := data["messages"].([]any)
	normal := 0
	for _, m := range msgs {
		if m.(map[string]any)["status"] == "normal" {
			normal++
		}
	}
	return normal
}

func dialPlatform(t *testing.T, base, userID, token string, platform int) *wsClient {
	t.Helper()
	return dialURL(t, base, fmt.Sprintf("/ws?platform_id=%d&send_id=%s&token=%s", platform, userID, token), userID, token)
}

// TestNewerLoginEndsTheOlderSession: a new login on the same platform
// revokes the older token, and its live WebSocket session is closed at once
// with session_invalid (not only at the next token check).
func TestNewerLoginEndsTheOlderSession(t *testing.T) {
	t.Parallel()
	cfg := realConfig(t)
	base, _, _ := startApp(t, cfg)
	old := dial(t, base, "kim", user(t, base, "kim"))
	if code, env := call(t, "POST", base+"/auth/login", `{"user_id":"kim","password":"plum-tart-9","platform_id":5}`, ""); code != 200 {
		t.Fatalf("second login: %d %v", code, env)
	}
	got := old.waitPushes(3001, "session_invalid", func(f []frame) bool { return len(f) >= 1 })
	if got[0].field("reason") != "session_invalid" {
		t.Fatalf("error push %s", got[0].Data)
	}
	select {
	case <-old.closed:
	case <-time.After(5 * time.Second):
		t.Fatal("the older session stayed open")
	}
}
