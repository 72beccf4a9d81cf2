package ws

import (
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/nexo-im/nexo/domain"
	"github.com/nexo-im/nexo/gateway/wire"
)

// auditLines returns the audit lines written to s so far, decoded.
func auditLines(t *testing.T, s *syncBuffer) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, l := range strings.Split(strings.TrimSpace(s.String()), "\n") {
		var m map[string]any
		if l == "" {
			continue
		}
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("line %q: %v", l, err)
		}
		if m["msg"] == "audit" {
			out = append(out, m)
		}
	}
	return out
}

// TestPushAuditPerConnection: a push of a tagged frame writes one "push"
// audit line per connection it reaches, with the message's keys and the
// recipient connection's user_id, platform_id and conn_id (debug when
// queued); a connection that refuses it (closing) gets a warn line with
// result failed (issue 15 item 3). Untagged frames write nothing.
func TestPushAuditPerConnection(t *testing.T) {
	var buf syncBuffer
	audit := domain.NewAudit(slog.New(slog.NewJSONHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug})), "inst-1", 1000, 1000)
	e := newEnv(t, testConfig(), func(s *envSettings) { s.deps.Audit = audit })
	e.dial("bob", 2)
	e.dial("bob", 5)
	waitFor(t, 5*time.Second, "two connections", func() bool { return len(e.userConns("bob")) == 2 })

	f := mustEncode(wire.Response{ReqIdentifier: wire.PushMsg, Data: map[string]any{"seq": 9}})
	ctx := context.Background()
	e.srv.PushToUser(ctx, "bob", f, "") // untagged: no audit line
	if got := auditLines(t, &buf); len(got) != 0 {
		t.Fatalf("untagged push audited: %v", got)
	}
	ref := MsgRef{ServerMsgID: "s-9", ConversationID: "si_alice_bob", Seq: 9}
	if n := e.srv.PushToUsers(ctx, []string{"bob"}, f.WithMsg(ref), ""); n != 2 {
		t.Fatalf("pushed to %d connections, want 2", n)
	}
	platforms := map[float64]string{}
	for _, l := range auditLines(t, &buf) {
		for k, v := range map[string]any{"level": "DEBUG", "point": "push", "result": "ok", "server_msg_id": "s-9",
			"conversation_id": "si_alice_bob", "seq": float64(9), "user_id": "bob", "instance_id": "inst-1"} {
			if l[k] != v {
				t.Errorf("%s = %v, want %v (line %v)", k, l[k], v, l)
			}
		}
		id, _ := l["conn_id"].(string)
		platforms[l["platform_id"].(float64)] = id
	}
	conns := e.userConns("bob")
	if len(platforms) != 2 || platforms[2] == "" || platforms[5] == "" || !strings.Contains(strings.Join(conns, ","), platforms[2]) {
		t.Fatalf("push lines by platform %v, connections %v", platforms, conns)
	}

	// A connection that is closing refuses the frame: a warn line names it.
	buf.mu.Lock()
	buf.buf.Reset()
	buf.mu.Unlock()
	var closing *Conn
	for _, c := range e.srv.reg.conns("bob", nil) {
		if c.platformID == 2 {
			closing = c
		}
	}
	closing.mu.Lock()
	closing.sealed = true
	closing.mu.Unlock()
	if e.srv.PushToConn(ctx, "bob", closing.id, f.WithMsg(ref)) {
		t.Fatal("a sealed connection queued the push")
	}
	got := auditLines(t, &buf)
	if len(got) != 1 {
		t.Fatalf("want 1 failure line, got %v", got)
	}
	l := got[0]
	if l["level"] != "WARN" || l["result"] != "failed" || l["conn_id"] != closing.id || l["platform_id"] != float64(2) ||
		l["server_msg_id"] != "s-9" || !strings.Contains(l["err"].(string), "not queued") {
		t.Fatalf("failure line %v", l)
	}
}
