package app

import (
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
)

// TestUserLimitSharedAcrossTransports: HTTP sends and WebSocket requests of
// one user count against one limit (ws.rate_limit / ws.rate_burst, kept in
// Redis); over it, HTTP answers 429 too_many_requests with Retry-After and
// data.retry_after_ms, and WebSocket answers the request with the same.
func TestUserLimitSharedAcrossTransports(t *testing.T) {
	t.Parallel()
	cfg := realConfig(t)
	cfg.WS.RateLimit = 0.001 // no refill during the test
	cfg.WS.RateBurst = 3
	base, _, _ := startApp(t, cfg)
	tokA := user(t, base, "alice")
	user(t, base, "bob")
	a := dial(t, base, "alice", tokA)

	httpSend := func(id string) (*http.Response, map[string]any) {
		t.Helper()
		req, _ := http.NewRequest("POST", base+"/msg/send", strings.NewReader(
			`{"client_msg_id":"`+id+`","session_type":1,"recv_id":"bob","msg_type":101,"content":{"text":"hi"}}`))
		req.Header.Set("Authorization", "Bearer "+tokA)
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var env map[string]any
		_ = decodeJSON(resp.Body, &env)
		return resp, env
	}
	for _, id := range []string{"h1", "h2"} {
		if resp, env := httpSend(id); resp.StatusCode != 200 {
			t.Fatalf("HTTP send %s: %d %v", id, resp.StatusCode, env)
		}
	}
	if f := a.send("bob", "w1", "hi"); f.ErrCode != 0 {
		t.Fatalf("WS send: %+v %s", f, f.Data)
	}
	resp, env := httpSend("h3")
	ra, _ := strconv.Atoi(resp.Header.Get("Retry-After"))
	if resp.StatusCode != 429 || env["err_msg"] != "too_many_requests" || ra < 1 || dataField(env, "retry_after_ms") == "<nil>" {
		t.Fatalf("HTTP send over the limit: %d Retry-After %q %v", resp.StatusCode, resp.Header.Get("Retry-After"), env)
	}
	f := a.send("bob", "w2", "hi")
	if f.ErrCode != 1429 || f.field("reason") != "too_many_requests" || f.field("retry_after_ms") == nil {
		t.Fatalf("WS send over the limit: %+v %s", f, f.Data)
	}
}

func decodeJSON(r io.Reader, v any) error { return json.NewDecoder(r).Decode(v) }
