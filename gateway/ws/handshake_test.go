package ws

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/nexo-im/nexo/gateway/wire"
)

func TestHandshakeRefusals(t *testing.T) {
	e := newEnv(t, testConfig())
	good, _ := e.auth.issue("alice", 5, time.Time{})
	cases := []struct {
		name   string
		query  string
		origin string
		status int
		reason wire.Reason
	}{
		{"no token", "platform_id=5", "", 401, wire.ReasonTokenMissing},
		{"invalid token", "token=invalid&platform_id=5", "", 401, wire.ReasonTokenInvalid},
		{"unknown token", "token=nope&platform_id=5", "", 401, wire.ReasonTokenInvalid},
		{"expired token", "token=expired&platform_id=5", "", 401, wire.ReasonTokenExpired},
		{"revoked token", "token=revoked&platform_id=5", "", 401, wire.ReasonTokenRevoked},
		{"send_id of another user", "token=" + good + "&send_id=bob&platform_id=5", "", 401, wire.ReasonUnauthorized},
		{"other platform", "token=" + good + "&platform_id=6", "", 401, wire.ReasonUnauthorized},
		{"no platform", "token=" + good, "", 401, wire.ReasonUnauthorized},
		{"platform not a number", "token=" + good + "&platform_id=web", "", 401, wire.ReasonUnauthorized},
		{"auth outage", "token=outage&platform_id=5", "", 503, wire.ReasonServerBusy},
		{"foreign origin", "token=" + good + "&platform_id=5", "https://evil.example", 403, wire.ReasonForbidden},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c, h := e.dialRaw(tc.query, dialOptions{origin: tc.origin})
			if c != nil {
				t.Fatal("upgraded; want a refusal")
			}
			if h.status != tc.status || h.body.ErrMsg != string(tc.reason) || h.body.ErrCode != wire.Lookup(tc.reason).ErrCode {
				t.Fatalf("got %d %+v, want %d %s", h.status, h.body, tc.status, tc.reason)
			}
			data, _ := h.body.Data.(map[string]any)
			if data["reason"] != string(tc.reason) {
				t.Fatalf("data.reason = %v, want %s", data["reason"], tc.reason)
			}
		})
	}
	if n := e.srv.ConnCount(); n != 0 {
		t.Fatalf("%d connections registered after refusals", n)
	}
	// The server is still up and a good handshake works.
	c := e.dialWith("alice", 5, time.Time{}, dialOptions{origin: "http://" + e.addr})
	_ = c
}

// Clients that can set headers may send the token as the HTTP API takes it.
func TestHandshakeTokenHeaders(t *testing.T) {
	e := newEnv(t, testConfig())
	for _, h := range []func(string) map[string]string{
		func(tok string) map[string]string { return map[string]string{"token": tok} },
		func(tok string) map[string]string { return map[string]string{"Authorization": "Bearer " + tok} },
	} {
		token, _ := e.auth.issue("alice", 5, time.Time{})
		c, refused := e.dialRaw("platform_id=5", dialOptions{header: h(token)})
		if refused != nil {
			t.Fatalf("header %v refused: %+v", h("…"), refused)
		}
		_ = c.conn.Close()
	}
	_, refused := e.dialRaw("platform_id=5", dialOptions{header: map[string]string{"Authorization": "Basic abc"}})
	if refused == nil || refused.body.ErrMsg != string(wire.ReasonTokenMissing) {
		t.Fatalf("Basic authorization: %+v", refused)
	}
}

func TestHandshakeNotWebSocket(t *testing.T) {
	e := newEnv(t, testConfig())
	token, _ := e.auth.issue("alice", 5, time.Time{})
	status, body, err := e.http.Get(t.Context(), nil, "http://"+e.addr+"/ws?token="+token+"&platform_id=5")
	if err != nil {
		t.Fatal(err)
	}
	if status != 400 {
		t.Fatalf("plain GET answered %d %s, want 400", status, body)
	}
}

func TestOriginAllowed(t *testing.T) {
	cases := []struct {
		allowed      []string
		origin, host string
		want         bool
	}{
		{nil, "", "a.example:8080", true},
		{nil, "http://a.example:8080", "a.example:8080", true},
		{nil, "http://b.example:8080", "a.example:8080", false},
		{nil, "::not a url", "a.example", false},
		{[]string{"*"}, "https://anything.example", "a.example", true},
		{[]string{"https://app.example"}, "https://APP.example", "a.example", true},
		{[]string{"https://app.example/"}, "https://app.example", "a.example", true},
		{[]string{"https://app.example"}, "http://app.example", "a.example", false},
	}
	for _, tc := range cases {
		if got := originAllowed(tc.allowed, tc.origin, tc.host); got != tc.want {
			t.Errorf("originAllowed(%v, %q, %q) = %v, want %v", tc.allowed, tc.origin, tc.host, got, tc.want)
		}
	}
}

func TestConnIdentityFromToken(t *testing.T) {
	e := newEnv(t, testConfig())
	got := make(chan *Conn, 1)
	e.srv.Handle(4242, func(_ context.Context, c *Conn, _ json.RawMessage) (any, error) {
		got <- c
		return nil, nil
	})
	c := e.dial("alice", 5)
	c.request(4242, "1", "{}")
	if f := c.next(); f.ErrCode != 0 {
		t.Fatalf("response %+v", f)
	}
	conn := <-got
	if conn.UserID() != "alice" || conn.PlatformID() != 5 || conn.OperationID() != "op-dial" || conn.ID() == "" {
		t.Fatalf("conn identity = %q %d %q %q", conn.UserID(), conn.PlatformID(), conn.OperationID(), conn.ID())
	}
}
