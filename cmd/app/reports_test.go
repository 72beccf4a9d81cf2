package app

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nexo-im/nexo/configs"
	"github.com/nexo-im/nexo/domain"
)

// fileReport reports seq of conv as the token's user over POST /msg/report,
// retrying while the message is not saved yet (two-phase saves after the
// ACK), and returns the answer.
func fileReport(t *testing.T, base, token, conv string, seq int64, reason string) (int, map[string]any) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		code, env := call(t, "POST", base+"/msg/report", fmt.Sprintf(`{"conversation_id":%q,"seq":%d,"reason":%q}`, conv, seq, reason), token)
		if code != 404 || env["err_msg"] != "message_not_found" || time.Now().After(deadline) {
			return code, env
		}
		time.Sleep(50 * time.Millisecond) // polling for the save with a deadline
	}
}

// wantErr fails unless the answer is status code with reason.
func wantErr(t *testing.T, what string, code int, env map[string]any, status int, reason string) {
	t.Helper()
	if code != status || env["err_msg"] != reason {
		t.Fatalf("%s: %d %v, want %d %s", what, code, env, status, reason)
	}
}

// TestReportsOnEveryPath: a party of a single chat reports a message over
// HTTP and a group member over WebSocket (1113); the report keeps the
// content as it was (a later recall changes nothing), the message_reported
// event carries it, and reporting again answers the same report with
// duplicate true and no second event. Refused: a reason too long or
// empty, seq 0, a seq beyond max_seq, a message before the caller joined,
// a conversation the caller is not in, one's own message, a notification.
// The server API lists reports by status, page by page, and resolves one
// (again: unchanged; an unknown id: report_not_found). limits.report
// holds a flooder to its burst.
func TestReportsOnEveryPath(t *testing.T) {
	t.Parallel()
	rcv := newReceiver(t)
	cfg := hookConfig(t, rcv, configs.EventMessageReported)
	const burst = 40 // above what bob's calls (save polls included) use
	cfg.Limits.Report = configs.Rate{Rate: 1, Period: time.Hour, Burst: burst}
	base, _, _ := startApp(t, cfg)
	tok := modUsers(t, base, "alice", "bob", "carol", "mallory", "flood")
	bob := dial(t, base, "bob", tok["bob"])

	ack := mustAPI(t, "POST", base+"/api/msg/send", `{"send_id":"alice","session_type":1,"recv_id":"bob","msg_type":101,"content":{"text":"send me your password"}}`)
	conv, seq := fmt.Sprint(ack["conversation_id"]), int64(ack["seq"].(float64))
	code, env := fileReport(t, base, tok["bob"], conv, seq, "phishing")
	first := envData(env)
	if code != 200 || first["status"] != "open" || first["duplicate"] != false || first["report_id"] == "" {
		t.Fatalf("report: %d %v", code, env)
	}
	reportID := fmt.Sprint(first["report_id"])
	evs := rcv.wait("message_reported", func(e []hookEvent) bool { return len(e) >= 1 })
	data, _ := evs[0].Body["data"].(map[string]any)
	msg, _ := data["message"].(map[string]any)
	content, _ := msg["content"].(map[string]any)
	if evs[0].Event != "message_reported" || evs[0].ID != "message_reported:"+reportID || data["report_id"] != reportID || data["reporter_id"] != "bob" || msg["sender_id"] != "alice" ||
		content["text"] != "send me your password" || data["reason"] != "phishing" {
		t.Fatalf("event: %+v", evs[0])
	}
	// Again: the same report, no new event.
	code, env = fileReport(t, base, tok["bob"], conv, seq, "another reason")
	if code != 200 || dataField(env, "report_id") != reportID || envData(env)["duplicate"] != true {
		t.Fatalf("again: %d %v", code, env)
	}
	// The sender recalls the message; the report keeps what was said.
	if code, env := call(t, "POST", base+"/msg/revoke", fmt.Sprintf(`{"conversation_id":%q,"seq":%d}`, conv, seq), tok["alice"]); code != 200 {
		t.Fatalf("revoke: %d %v", code, env)
	}

	// Hostile inputs.
	long := strings.Repeat("é", domain.MaxReportReasonLen+1)
	code, env = call(t, "POST", base+"/msg/report", fmt.Sprintf(`{"conversation_id":%q,"seq":%d,"reason":%q}`, conv, seq, long), tok["bob"])
	wantErr(t, "reason too long", code, env, 400, "bad_request")
	code, env = call(t, "POST", base+"/msg/report", fmt.Sprintf(`{"conversation_id":%q,"seq":%d,"reason":""}`, conv, seq), tok["bob"])
	wantErr(t, "reason empty", code, env, 400, "bad_request")
	code, env = call(t, "POST", base+"/msg/report", fmt.Sprintf(`{"conversation_id":%q,"seq":0,"reason":"x"}`, conv), tok["bob"])
	wantErr(t, "seq 0", code, env, 400, "bad_request")
	code, env = call(t, "POST", base+"/msg/report", fmt.Sprintf(`{"conversation_id":%q,"seq":9999,"reason":"x"}`, conv), tok["bob"])
	wantErr(t, "seq beyond max_seq", code, env, 404, "message_not_found")
	code, env = call(t, "POST", base+"/msg/report", fmt.Sprintf(`{"conversation_id":%q,"seq":%d,"reason":"x"}`, conv, seq), tok["mallory"])
	wantErr(t, "not a party", code, env, 403, "not_conversation_member")
	code, env = call(t, "POST", base+"/msg/report", `{"conversation_id":"../etc","seq":1,"reason":"x"}`, tok["bob"])
	wantErr(t, "malformed conversation_id", code, env, 400, "bad_request")
	code, env = call(t, "POST", base+"/msg/report", fmt.Sprintf(`{"conversation_id":%q,"seq":%d,"reason":"x","extra":1}`, conv, seq), tok["bob"])
	wantErr(t, "unknown field", code, env, 400, "bad_request")
	code, env = call(t, "POST", base+"/msg/report", fmt.Sprintf(`{"conversation_id":%q,"seq":%d,"reason":"x"}`, conv, seq), "")
	if code != 401 {
		t.Fatalf("no token: %d %v", code, env)
	}
	ownAck := mustAPI(t, "POST", base+"/api/msg/send", `{"send_id":"bob","session_type":1,"recv_id":"alice","msg_type":101,"content":{"text":"mine"}}`)
	code, env = fileReport(t, base, tok["bob"], conv, int64(ownAck["seq"].(float64)), "x")
	wantErr(t, "own message", code, env, 400, "bad_request")
	// The recall notice (1600, saved before bob's own message) is the
	// server's, not a user's message.
	code, env = call(t, "POST", base+"/msg/report", fmt.Sprintf(`{"conversation_id":%q,"seq":%d,"reason":"x"}`, conv, seq+1), tok["bob"])
	wantErr(t, "a notification", code, env, 400, "bad_request")

	// A group: bob reports over WebSocket; carol, invited after the
	// message, cannot see it and so cannot report it.
	g := mustAPI(t, "POST", base+"/api/group/create", `{"op_user_id":"alice","name":"g","member_ids":["bob","mallory"]}`)
	gid := fmt.Sprint(g["group_id"])
	gack := mustAPI(t, "POST", base+"/api/msg/send", fmt.Sprintf(`{"send_id":"mallory","session_type":3,"group_id":%q,"msg_type":101,"content":{"text":"rude words"}}`, gid))
	gconv, gseq := fmt.Sprint(gack["conversation_id"]), int64(gack["seq"].(float64))
	mustAPI(t, "POST", base+"/api/group/invite", fmt.Sprintf(`{"op_user_id":"alice","group_id":%q,"user_ids":["carol"]}`, gid))
	var r frame
	for deadline := time.Now().Add(10 * time.Second); ; {
		r = bob.request(1113, map[string]any{"conversation_id": gconv, "seq": gseq, "reason": "rude"})
		if r.ErrMsg != "message_not_found" || time.Now().After(deadline) {
			break
		}
		time.Sleep(50 * time.Millisecond) // polling for the save with a deadline
	}
	if r.ErrCode != 0 || r.field("duplicate") != false || r.field("report_id") == "" {
		t.Fatalf("WS 1113: %+v %s", r, r.Data)
	}
	groupReport := fmt.Sprint(r.field("report_id"))
	// Saved (bob's report found it): a 404 now is the visibility rule.
	code, env = call(t, "POST", base+"/msg/report", fmt.Sprintf(`{"conversation_id":%q,"seq":%d,"reason":"x"}`, gconv, gseq), tok["carol"])
	wantErr(t, "a seq before the caller joined", code, env, 404, "message_not_found")
	if r := bob.request(1113, map[string]any{"conversation_id": gconv, "seq": gseq, "reason": strings.Repeat("x", 501)}); r.ErrMsg != "bad_request" {
		t.Fatalf("WS reason too long: %+v", r)
	}

	// The server API.
	list := func(query string) (reports []map[string]any, next string) {
		t.Helper()
		d := mustAPI(t, "GET", base+"/api/reports"+query, "")
		raw, _ := json.Marshal(d["reports"])
		_ = json.Unmarshal(raw, &reports)
		return reports, fmt.Sprint(d["next_cursor"])
	}
	page, next := list("?status=open&limit=1")
	if len(page) != 1 || page[0]["report_id"] != reportID || next != reportID {
		t.Fatalf("page 1: %v next %q", page, next)
	}
	m, _ := page[0]["message"].(map[string]any)
	c, _ := m["content"].(map[string]any)
	if c["text"] != "send me your password" || m["status"] != "normal" || page[0]["reason"] != "phishing" {
		t.Fatalf("the report lost the message as reported: %v", page[0])
	}
	page, next = list("?status=open&limit=1&cursor=" + next)
	if len(page) != 1 || page[0]["report_id"] != groupReport || next != "" {
		t.Fatalf("page 2: %v next %q", page, next)
	}
	code, env = serverAPI(t, "GET", base+"/api/reports?status=closed", "")
	wantErr(t, "unknown status", code, env, 400, "bad_request")
	code, env = serverAPI(t, "GET", base+"/api/reports?limit=101", "")
	wantErr(t, "limit too high", code, env, 400, "bad_request")
	res := mustAPI(t, "POST", base+"/api/reports/"+reportID+"/resolve", `{"op_user_id":"mod1","resolution":"account warned"}`)
	if res["status"] != "resolved" || res["resolved_by"] != "mod1" || res["resolution"] != "account warned" || res["resolved_at"] == nil {
		t.Fatalf("resolve: %v", res)
	}
	again := mustAPI(t, "POST", base+"/api/reports/"+reportID+"/resolve", `{"op_user_id":"mod2","resolution":"banned"}`)
	if again["resolved_by"] != "mod1" || again["resolved_at"] != res["resolved_at"] {
		t.Fatalf("resolve again changed it: %v", again)
	}
	code, env = serverAPI(t, "POST", base+"/api/reports/nope/resolve", `{}`)
	if code != 404 || env["err_msg"] != "report_not_found" || env["err_code"] != 1340.0 {
		t.Fatalf("unknown report: %d %v", code, env)
	}
	if page, _ := list("?status=resolved"); len(page) != 1 || page[0]["report_id"] != reportID {
		t.Fatalf("resolved: %v", page)
	}
	if page, _ := list(""); len(page) != 2 {
		t.Fatalf("all: %v", page)
	}
	code, env = call(t, "GET", base+"/api/reports", "", tok["bob"])
	if code != 401 {
		t.Fatalf("a user's token on the server API: %d %v", code, env)
	}

	// limits.report: burst, then too_many_requests (repeats count).
	fack := mustAPI(t, "POST", base+"/api/msg/send", `{"send_id":"alice","session_type":1,"recv_id":"flood","msg_type":101,"content":{"text":"hello"}}`)
	fconv, fseq := fmt.Sprint(fack["conversation_id"]), int64(fack["seq"].(float64))
	var used int
	for deadline := time.Now().Add(10 * time.Second); ; {
		code, env := call(t, "POST", base+"/msg/report", fmt.Sprintf(`{"conversation_id":%q,"seq":%d,"reason":"x"}`, fconv, fseq), tok["flood"])
		used++
		if code == 200 {
			break
		}
		if env["err_msg"] != "message_not_found" || time.Now().After(deadline) || used == burst {
			t.Fatalf("flood 1: %d %v", code, env)
		}
		time.Sleep(50 * time.Millisecond) // polling for the save with a deadline
	}
	for i := used + 1; i <= burst; i++ {
		if code, env := call(t, "POST", base+"/msg/report", fmt.Sprintf(`{"conversation_id":%q,"seq":%d,"reason":"x"}`, fconv, fseq), tok["flood"]); code != 200 {
			t.Fatalf("flood %d: %d %v", i, code, env)
		}
	}
	code, env = call(t, "POST", base+"/msg/report", fmt.Sprintf(`{"conversation_id":%q,"seq":%d,"reason":"x"}`, fconv, fseq), tok["flood"])
	wantErr(t, "past limits.report", code, env, 429, "too_many_requests")
	// Over WebSocket the refusal answers the request; the connection
	// stays open.
	flood := dial(t, base, "flood", tok["flood"])
	if r := flood.request(1113, map[string]any{"conversation_id": fconv, "seq": fseq, "reason": "x"}); r.ErrMsg != "too_many_requests" ||
		r.ErrCode != 1429 || r.field("retry_after_ms") == nil {
		t.Fatalf("WS past limits.report: %+v %s", r, r.Data)
	}
	if r := flood.request(1001, map[string]any{"conversation_ids": []string{fconv}}); r.ErrCode != 0 {
		t.Fatalf("the connection after the refusal: %+v %s", r, r.Data)
	}
	// Only new reports made events: bob's two and flood's one.
	rcv.wait("three message_reported events", func(e []hookEvent) bool { return len(e) >= 3 })
	rcv.mu.Lock()
	n := len(rcv.events)
	rcv.mu.Unlock()
	if n != 3 {
		t.Fatalf("%d events, want 3", n)
	}
}

// TestReportsAcrossInstances: a message sent through one instance is
// reported through another and listed and resolved through the first.
func TestReportsAcrossInstances(t *testing.T) {
	t.Parallel()
	nodes := startCluster(t, 2, func(_ int, c *configs.Config) { c.ServerAPI.Keys = []string{apiKey} })
	tok := modUsers(t, nodes[0].base, "ann", "bo")
	ack := mustAPI(t, "POST", nodes[0].base+"/api/msg/send", `{"send_id":"ann","session_type":1,"recv_id":"bo","msg_type":101,"content":{"text":"hey"}}`)
	conv, seq := fmt.Sprint(ack["conversation_id"]), int64(ack["seq"].(float64))
	code, env := fileReport(t, nodes[1].base, tok["bo"], conv, seq, "spam")
	if code != 200 {
		t.Fatalf("report through instance 2: %d %v", code, env)
	}
	id := dataField(env, "report_id")
	if code, env := fileReport(t, nodes[0].base, tok["bo"], conv, seq, "spam"); code != 200 || dataField(env, "report_id") != id || envData(env)["duplicate"] != true {
		t.Fatalf("again through instance 1: %d %v", code, env)
	}
	d := mustAPI(t, "GET", nodes[0].base+"/api/reports?status=open", "")
	if list, _ := d["reports"].([]any); len(list) != 1 {
		t.Fatalf("list through instance 1: %v", d)
	}
	if res := mustAPI(t, "POST", nodes[0].base+"/api/reports/"+id+"/resolve", `{}`); res["status"] != "resolved" {
		t.Fatalf("resolve: %v", res)
	}
}
