package app

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"
)

// logLine parses one slog text line (key=value, values quoted when they
// need it) into its keys.
func logLine(l string) map[string]string {
	out := map[string]string{}
	for l = strings.TrimSpace(l); l != ""; l = strings.TrimLeft(l, " ") {
		eq := strings.IndexByte(l, '=')
		if eq < 0 {
			break
		}
		key, rest := l[:eq], l[eq+1:]
		if strings.HasPrefix(rest, `"`) {
			end := 1
			for end < len(rest) && (rest[end] != '"' || rest[end-1] == '\\') {
				end++
			}
			v, err := strconv.Unquote(rest[:min(end+1, len(rest))])
			if err != nil {
				v = rest[1:end]
			}
			out[key], l = v, rest[min(end+1, len(rest)):]
			continue
		}
		sp := strings.IndexByte(rest, ' ')
		if sp < 0 {
			sp = len(rest)
		}
		out[key], l = rest[:sp], rest[sp:]
	}
	return out
}

// auditLine waits (up to 10 s) for an audit line of point whose keys
// include match, and returns it.
func auditLine(t *testing.T, logs fmt.Stringer, point string, match map[string]string) map[string]string {
	t.Helper()
	var found map[string]string
	waitUntil(t, 10*time.Second, fmt.Sprintf("an audit line point=%s with %v", point, match), func() bool {
		for _, raw := range strings.Split(logs.String(), "\n") {
			if !strings.Contains(raw, "msg=audit") {
				continue
			}
			l := logLine(raw)
			ok := l["point"] == point
			for k, v := range match {
				ok = ok && l[k] == v
			}
			if ok {
				found = l
				return true
			}
		}
		return false
	})
	return found
}

// want checks that line l has every key of fields with its value ("*":
// any non-empty value).
func want(t *testing.T, point string, l map[string]string, fields map[string]string) {
	t.Helper()
	for k, v := range fields {
		if got, ok := l[k]; !ok || v == "*" && got == "" || v != "*" && got != v {
			t.Errorf("%s line: %s = %q, want %q (line %v)", point, k, got, v, l)
		}
	}
}

// metricValue returns the value of a sample line (name plus labels as
// written) of a scrape, -1 when absent.
func metricValue(text, series string) float64 {
	for _, l := range strings.Split(text, "\n") {
		if v, ok := strings.CutPrefix(l, series+" "); ok {
			f, _ := strconv.ParseFloat(strings.TrimSpace(v), 64)
			return f
		}
	}
	return -1
}

// TestSendWritesAuditLines: every audit point of the message path writes
// its line at debug level with every key issue 15 item 3 names — the ACK
// (sender, its platform and connection), the deliver stage, each
// recipient connection's push (the recipient's platform and connection),
// the delivered and read ACKs (cursor before and after) and the offline
// resend — and the cursor moves observe the saved → delivered and
// delivered → read histograms (item 4).
func TestSendWritesAuditLines(t *testing.T) {
	t.Parallel()
	cfg := embeddedConfig(t)
	cfg.TwoPhase.Enabled, cfg.TwoPhase.DeliverBeforeSaved = true, false // the deliver stage runs, after the save
	_, base, logs, _ := runApp(t, cfg)
	user(t, base, "audita")
	bobHTTP := user(t, base, "auditb") // platform 5
	alice := dialPlatform(t, base, "audita", loginOn(t, base, "audita", 2), 2)
	bob := dialPlatform(t, base, "auditb", loginOn(t, base, "auditb", 3), 3)

	ack := alice.send("auditb", "aud-1", "hi")
	id, _ := ack.field("server_msg_id").(string)
	conv, _ := ack.field("conversation_id").(string)
	if ack.ErrCode != 0 || id == "" || conv == "" {
		t.Fatalf("send: %+v", ack)
	}
	msg := map[string]string{"server_msg_id": id, "conversation_id": conv, "seq": "1", "instance_id": "*", "result": "ok", "level": "DEBUG"}

	a := auditLine(t, logs, "ack", map[string]string{"server_msg_id": id})
	want(t, "ack", a, msg)
	want(t, "ack", a, map[string]string{"user_id": "audita", "platform_id": "2", "conn_id": "*", "ack_type": "accepted"})
	d := auditLine(t, logs, "deliver", map[string]string{"server_msg_id": id})
	want(t, "deliver", d, msg)
	want(t, "deliver", d, map[string]string{"user_id": "audita", "conn_id": a["conn_id"]})
	p := auditLine(t, logs, "push", map[string]string{"server_msg_id": id, "user_id": "auditb"})
	want(t, "push", p, msg)
	want(t, "push", p, map[string]string{"platform_id": "3", "conn_id": "*"})
	if p["conn_id"] == a["conn_id"] {
		t.Errorf("push line names the sending connection %s", p["conn_id"])
	}
	bob.waitPushes(2001, "the message", func(f []frame) bool { return len(f) == 1 })

	// bob's client ACKs the delivery over its connection: the cursor moves
	// 0 -> 1 (once flushed) and saved -> delivered is observed.
	if r := bob.request(1101, map[string]any{"ack_type": "delivered", "conversation_id": conv, "seq": 1}); r.ErrCode != 0 {
		t.Fatalf("1101: %+v", r)
	}
	c := auditLine(t, logs, "cursor", map[string]string{"user_id": "auditb", "ack_type": "delivered"})
	want(t, "cursor", c, msg)
	want(t, "cursor", c, map[string]string{"platform_id": "3", "conn_id": p["conn_id"], "cursor_before": "0", "cursor_after": "1"})
	if n := metricValue(scrape(t, base), "nexo_saved_to_delivered_seconds_count"); n != 1 {
		t.Errorf("nexo_saved_to_delivered_seconds_count = %v after one delivered ACK, want 1", n)
	}

	// Read over HTTP (the token's platform 5, no connection): the read
	// cursor moves 0 -> 1 and delivered -> read is observed.
	if code, env := call(t, "POST", base+"/msg/mark_read", fmt.Sprintf(`{"conversation_id":%q,"seq":1}`, conv), bobHTTP); code != 200 {
		t.Fatalf("mark_read: %d %v", code, env)
	}
	r := auditLine(t, logs, "cursor", map[string]string{"user_id": "auditb", "ack_type": "read"})
	want(t, "read cursor", r, msg)
	want(t, "read cursor", r, map[string]string{"platform_id": "5", "conn_id": "", "cursor_before": "0", "cursor_after": "1"})
	if n := metricValue(scrape(t, base), "nexo_delivered_to_read_seconds_count"); n != 1 {
		t.Errorf("nexo_delivered_to_read_seconds_count = %v after one read, want 1", n)
	}

	// A second message bob does not ACK; his connection on platform 4 gets
	// it by offline resend, from his delivered cursor (1) up to seq 2.
	ack2 := alice.send("auditb", "aud-2", "again")
	id2, _ := ack2.field("server_msg_id").(string)
	auditLine(t, logs, "push", map[string]string{"server_msg_id": id2, "user_id": "auditb"})
	tablet := dialPlatform(t, base, "auditb", loginOn(t, base, "auditb", 4), 4)
	tablet.waitPushes(2001, "the resent message", func(f []frame) bool { return len(f) == 1 })
	rs := auditLine(t, logs, "resend", map[string]string{"user_id": "auditb", "platform_id": "4"})
	want(t, "resend", rs, map[string]string{"server_msg_id": id2, "conversation_id": conv, "seq": "2", "conn_id": "*", "instance_id": "*",
		"cursor_before": "1", "cursor_after": "2", "messages": "1", "result": "ok", "level": "DEBUG"})
	if rs["conn_id"] == p["conn_id"] {
		t.Errorf("resend line names bob's other connection")
	}
}
