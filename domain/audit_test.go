package domain

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"testing"
)

func auditLines(t *testing.T, buf *bytes.Buffer) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, l := range strings.Split(strings.TrimSpace(buf.String()), "\n") {
		if l == "" {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("line %q: %v", l, err)
		}
		out = append(out, m)
	}
	return out
}

func TestAuditSuccessAtDebugCarriesTheKeys(t *testing.T) {
	var buf bytes.Buffer
	a := NewAudit(slog.New(slog.NewJSONHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug})), "web1-8080", 10, 10)
	m := &Message{ServerMsgID: "s1", ConversationID: "si_a_b", Seq: 7}
	a.OK(context.Background(), "ack", append(AuditMsg(m), append(AuditConn("a", 5, "c1"), AuditCursor(3, 7)...)...)...)
	lines := auditLines(t, &buf)
	if len(lines) != 1 {
		t.Fatalf("want 1 line, got %d", len(lines))
	}
	l := lines[0]
	want := map[string]any{"level": "DEBUG", "msg": "audit", "point": "ack", "result": "ok", "server_msg_id": "s1",
		"conversation_id": "si_a_b", "seq": float64(7), "user_id": "a", "platform_id": float64(5), "conn_id": "c1", "instance_id": "web1-8080",
		"cursor_before": float64(3), "cursor_after": float64(7)}
	for k, v := range want {
		if l[k] != v {
			t.Errorf("%s = %v, want %v (line %v)", k, l[k], v, l)
		}
	}
}

func TestAuditSuccessesSilentAtInfo(t *testing.T) {
	var buf bytes.Buffer
	a := NewAudit(slog.New(slog.NewJSONHandler(&buf, nil)), "i", 10, 10)
	a.OK(context.Background(), "ack")
	if buf.Len() != 0 {
		t.Fatalf("a success logged at info level: %s", buf.String())
	}
	var nilAudit *Audit
	nilAudit.OK(context.Background(), "ack")
	nilAudit.Fail(context.Background(), "push", errors.New("x"))
}

// 1,000 failures at once write at most the burst, and the next line that
// passes says how many were suppressed.
func TestAuditFailuresAreRateLimited(t *testing.T) {
	var buf bytes.Buffer
	const burst = 5
	a := NewAudit(slog.New(slog.NewJSONHandler(&buf, nil)), "i", 0.001, burst)
	for range 1000 {
		a.Fail(context.Background(), "push", errors.New("redis down"), slog.String("server_msg_id", "s"))
	}
	lines := auditLines(t, &buf)
	if len(lines) > burst || len(lines) == 0 {
		t.Fatalf("1000 failures wrote %d warn lines, want 1..%d", len(lines), burst)
	}
	for _, l := range lines {
		if l["level"] != "WARN" || l["result"] != "failed" || l["err"] != "redis down" {
			t.Fatalf("bad failure line %v", l)
		}
	}
	if got := a.fail.Suppressed(); got != int64(1000-len(lines)) {
		t.Fatalf("suppressed count %d, want %d", got, 1000-len(lines))
	}
	a.fail.lim.SetBurst(burst + 1) // let one more line through: it reports the drops
	a.fail.lim.SetLimit(1e9)
	buf.Reset()
	a.Fail(context.Background(), "push", nil)
	if l := auditLines(t, &buf); len(l) != 1 || l[0]["suppressed"] != float64(1000-burst) {
		t.Fatalf("next line after the flood: %v", l)
	}
}
