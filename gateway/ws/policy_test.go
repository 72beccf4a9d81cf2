package ws

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/nexo-im/nexo/configs"
	"github.com/nexo-im/nexo/gateway/limits"
	"github.com/nexo-im/nexo/gateway/wire"
	"github.com/nexo-im/nexo/store/storetest"
)

func TestLoginPolicy(t *testing.T) {
	type conn struct {
		platform int
		kicked   bool // expected to be kicked by the last connection
	}
	cases := []struct {
		policy string
		conns  []conn // the last one is the newcomer
	}{
		{configs.LoginSinglePerPlatform, []conn{{5, true}, {2, false}, {5, false}}},
		{configs.LoginSingle, []conn{{5, true}, {2, true}, {5, false}}},
		{configs.LoginMulti, []conn{{5, false}, {2, false}, {5, false}}},
	}
	for _, tc := range cases {
		t.Run(tc.policy, func(t *testing.T) {
			cfg := testConfig()
			cfg.LoginPolicy = tc.policy
			e := newEnv(t, cfg)
			clients := make([]*client, len(tc.conns))
			for i, cc := range tc.conns[:len(tc.conns)-1] {
				clients[i] = e.dial("alice", cc.platform)
			}
			last := len(tc.conns) - 1
			clients[last] = e.dial("alice", tc.conns[last].platform)

			wantAlive := 0
			for i, cc := range tc.conns {
				if !cc.kicked {
					wantAlive++
					continue
				}
				f := clients[i].next()
				if f.ReqIdentifier != wire.PushKick || f.reason() != string(wire.ReasonKicked) || f.ErrMsg != "kicked" {
					t.Fatalf("conn %d got %+v, want a 2002 kicked push", i, f)
				}
				if code, text, _ := clients[i].expectClosed(5 * time.Second); code != ClosePolicyViolation || text != "kicked" {
					t.Fatalf("conn %d closed with %d %q", i, code, text)
				}
			}
			// A kicked connection is out of the registry before its kick is
			// sent, so a push right now reaches only the survivors.
			push := mustEncode(wire.Response{ReqIdentifier: wire.PushMsg, Data: map[string]string{"conversation_id": "si_alice_bob"}})
			if n := e.srv.PushToUser(context.Background(), "alice", push, ""); n != wantAlive {
				t.Fatalf("push reached %d connections, want %d", n, wantAlive)
			}
			for i, cc := range tc.conns {
				if !cc.kicked {
					if f := clients[i].next(); f.ReqIdentifier != wire.PushMsg {
						t.Fatalf("survivor %d got %+v", i, f)
					}
				}
			}
			wantKicks := float64(len(tc.conns) - wantAlive)
			if got := testutil.ToFloat64(e.srv.metrics.kicks); got != wantKicks {
				t.Fatalf("kicks metric = %v, want %v", got, wantKicks)
			}
		})
	}
}

func TestPushExceptAndToConn(t *testing.T) {
	cfg := testConfig()
	cfg.LoginPolicy = configs.LoginMulti
	e := newEnv(t, cfg)
	a1 := e.dial("alice", 5)
	a2 := e.dial("alice", 5)
	b := e.dial("bob", 1)
	ids := e.userConns("alice")
	ctx := context.Background()
	f := mustEncode(wire.Response{ReqIdentifier: wire.PushGroupNotify, Data: map[string]any{"conversation_id": "sg_g1", "max_seq": 7}})

	if n := e.srv.PushToUsers(ctx, []string{"alice", "bob", "nobody"}, f, ids[0]); n != 2 {
		t.Fatalf("PushToUsers reached %d, want 2 (alice's other connection and bob)", n)
	}
	if !e.srv.PushToConn(ctx, "alice", ids[0], f) || e.srv.PushToConn(ctx, "alice", "no-such-conn", f) {
		t.Fatal("PushToConn")
	}
	// ids[0] got only the PushToConn frame, the other two one frame each.
	for _, c := range []*client{a1, a2, b} {
		if got := c.next(); got.ReqIdentifier != wire.PushGroupNotify {
			t.Fatalf("got %+v", got)
		}
	}
	if !e.srv.Online("alice") || e.srv.Online("nobody") || e.srv.ConnCount() != 3 {
		t.Fatalf("Online/ConnCount: %v %v %d", e.srv.Online("alice"), e.srv.Online("nobody"), e.srv.ConnCount())
	}
}

func TestRevokeSession(t *testing.T) {
	cfg := testConfig()
	cfg.LoginPolicy = configs.LoginMulti
	e := newEnv(t, cfg)
	keep := e.dial("alice", 2)
	gone := e.dial("alice", 5)
	other := e.dial("bob", 5)
	var jti string
	for _, c := range e.srv.reg.conns("alice", nil) {
		if c.platformID == 5 {
			jti = c.jti
		}
	}
	if n := e.srv.RevokeSession("alice", 5, "someone-else's-jti"); n != 0 {
		t.Fatalf("revoked %d connections for a foreign jti", n)
	}
	if n := e.srv.RevokeSession("alice", 5, jti); n != 1 {
		t.Fatalf("revoked %d connections, want 1", n)
	}
	f := gone.next()
	if f.ReqIdentifier != wire.PushError || f.reason() != string(wire.ReasonSessionInvalid) || f.ErrCode != 1107 {
		t.Fatalf("revoked connection got %+v", f)
	}
	if code, text, _ := gone.expectClosed(5 * time.Second); code != ClosePolicyViolation || text != "session_invalid" {
		t.Fatalf("close %d %q", code, text)
	}
	push := mustEncode(wire.Response{ReqIdentifier: wire.PushMsg})
	if n := e.srv.PushToUser(context.Background(), "alice", push, ""); n != 1 {
		t.Fatalf("push after revoke reached %d, want 1", n)
	}
	keep.next()
	// Everything of a user, on every platform.
	if n := e.srv.RevokeSession("alice", 0, ""); n != 1 {
		t.Fatalf("revoke all: %d", n)
	}
	keep.expectClosed(5 * time.Second)
	if e.srv.PushToUser(context.Background(), "bob", push, "") != 1 {
		t.Fatal("bob lost his connection")
	}
	other.next()
}

// The periodic backstop notices a revocation that RevokeSession never saw.
func TestRevocationBackstop(t *testing.T) {
	cfg := testConfig()
	cfg.PingInterval = 20 * time.Millisecond
	cfg.PongWait = time.Minute
	e := newEnv(t, cfg)
	c := e.dial("alice", 5)
	conn := e.srv.reg.conns("alice", nil)[0]
	waitFor(t, 5*time.Second, "a token check", func() bool { return e.tokens.calls.Load() > 0 })
	e.tokens.revoke(conn.jti)
	var f frame
	for f = c.next(); f.ReqIdentifier != wire.PushError; f = c.next() {
	}
	if f.reason() != string(wire.ReasonSessionInvalid) {
		t.Fatalf("got %+v", f)
	}
	c.expectClosed(5 * time.Second)
}

func TestTokenExpiryWhileConnected(t *testing.T) {
	e := newEnv(t, testConfig())
	c := e.dialWith("alice", 5, time.Now().Add(300*time.Millisecond), dialOptions{})
	f := c.next()
	if f.ReqIdentifier != wire.PushError || f.reason() != string(wire.ReasonTokenExpired) || f.ErrMsg != "token_expired" {
		t.Fatalf("got %+v", f)
	}
	if code, text, _ := c.expectClosed(5 * time.Second); code != ClosePolicyViolation || text != "token_expired" {
		t.Fatalf("close %d %q", code, text)
	}
	waitFor(t, 5*time.Second, "unregistration", func() bool { return e.srv.ConnCount() == 0 })
}

// TestRateLimit: the per-user limit lives in Redis, so it is shared by a
// user's connections on two instances and survives a reconnect (issue 11
// #6); a refused request is answered under its own req_identifier with
// too_many_requests and retry_after_ms, and the connection stays open. The
// application-level ping does not count.
func TestRateLimit(t *testing.T) {
	rdb, prefix := storetest.Redis(t)
	t.Cleanup(func() { storetest.DeletePrefix(rdb, "rate:"+prefix) })
	lim := limits.NewUserRequests(limits.New(rdb, prefix, nil, nil), 0.001, 3) // no refill during the test
	cfg := testConfig()
	cfg.LoginPolicy = configs.LoginMulti
	withLimit := func(s *envSettings) { s.deps.Limiter = lim }
	e1, e2 := newEnv(t, cfg, withLimit), newEnv(t, cfg, withLimit)
	installTestHandlers(e1.srv)
	installTestHandlers(e2.srv)
	c1 := e1.dial("alice", 5)
	for range 5 {
		c1.send("ping")
		if b := c1.nextRaw(5 * time.Second); string(b) != "pong" {
			t.Fatalf("app ping answered %q", b)
		}
	}
	c1.request(reqEcho, "1", `{}`)
	c1.request(reqEcho, "2", `{}`)
	c1.next()
	c1.next()
	_ = c1.conn.Close()
	c2 := e2.dial("alice", 5) // reconnected, on another instance
	c2.request(reqEcho, "3", `{}`)
	if f := c2.next(); f.MsgIncr != "3" || f.ErrCode != 0 {
		t.Fatalf("third request: %+v", f)
	}
	for _, incr := range []string{"4", "5"} {
		c2.request(reqEcho, incr, `{}`)
		f := c2.next()
		var d wire.ErrorData
		_ = json.Unmarshal(f.Data, &d)
		if f.ReqIdentifier != reqEcho || f.MsgIncr != incr || d.Reason != wire.ReasonTooManyRequests || f.ErrCode != 1429 || d.RetryAfterMs < 1000 {
			t.Fatalf("request %s: %+v", incr, f)
		}
	}
	// Another user has a budget of their own.
	b := e1.dial("bob", 5)
	b.request(reqEcho, "b", `{}`)
	if f := b.next(); f.ErrCode != 0 {
		t.Fatalf("bob: %+v", f)
	}
}

// endedOnRegistration waits for the session on ft to write one frame
// carrying want and then the close 1008 with reason (the peer's close
// reply, which ends the session, never comes from a fake transport).
func endedOnRegistration(t *testing.T, what string, ft *fakeTransport, want, reason string) {
	t.Helper()
	waitFor(t, 5*time.Second, what+" closed", func() bool { return len(ft.writes()) >= 2 })
	w := ft.writes()
	if len(w) != 2 || !strings.Contains(w[0], want) || w[1] != "close 1008 "+reason {
		t.Fatalf("%s wrote %q, want a frame with %s and close 1008 %s", what, w, want, reason)
	}
}

// kickedOnRegistration: the 2002 kick and its close.
func kickedOnRegistration(t *testing.T, what string, ft *fakeTransport) {
	t.Helper()
	endedOnRegistration(t, what, ft, `"req_identifier":2002`, "kicked")
}

// TestLoginPolicyOrdersByHandshake: connections are ordered by when their
// handshake was accepted, not by when their session goroutine registered.
// A client that saw its first connection open and then dialled a second
// keeps the second, however late the first session registers.
func TestLoginPolicyOrdersByHandshake(t *testing.T) {
	cfg := testConfig()
	cfg.LoginPolicy = configs.LoginSinglePerPlatform
	s := newTestServer(t, cfg)
	early := s.newConn("alice", 1, "jti", time.Time{}, "")
	late := s.newConn("alice", 1, "jti", time.Time{}, "")
	late.connectedAt = early.connectedAt.Add(time.Millisecond)
	runFakeSession(t, s, late, newFakeTransport(false))
	waitFor(t, 5*time.Second, "registration", func() bool { return s.Online("alice") })

	ft := newFakeTransport(false)
	runFakeSession(t, s, early, ft)
	kickedOnRegistration(t, "the earlier connection", ft)
	if !s.PushToConn(context.Background(), "alice", late.id, pushFrame) || s.ConnCount() != 1 {
		t.Fatalf("the later connection lost its place: %d connections", s.ConnCount())
	}
}

// TestRemoteKickReachesALateRegistration: another instance's kick
// (KickDisplaced) that arrives between a local connection's handshake and
// its registration still displaces it; connections it does not displace
// (another platform, or accepted after the kicking one) register as usual.
func TestRemoteKickReachesALateRegistration(t *testing.T) {
	cfg := testConfig()
	cfg.LoginPolicy = configs.LoginSinglePerPlatform
	s := newTestServer(t, cfg)
	before := s.newConn("alice", 1, "jti", time.Time{}, "")
	otherPlatform := s.newConn("alice", 2, "jti", time.Time{}, "")
	since := before.connectedAt.Add(time.Millisecond)
	after := s.newConn("alice", 1, "jti", time.Time{}, "")
	after.connectedAt = since.Add(time.Millisecond)
	if n := s.KickDisplaced("alice", 1, since); n != 0 {
		t.Fatalf("kicked %d connections before any registered", n)
	}

	ft := newFakeTransport(false)
	runFakeSession(t, s, before, ft)
	kickedOnRegistration(t, "the connection accepted before the kick", ft)
	runFakeSession(t, s, otherPlatform, newFakeTransport(false))
	runFakeSession(t, s, after, newFakeTransport(false))
	waitFor(t, 5*time.Second, "the two others registered", func() bool { return s.ConnCount() == 2 })
	if got := testutil.ToFloat64(s.metrics.kicks); got != 1 {
		t.Fatalf("kicks metric = %v, want 1", got)
	}
}

// TestSessionEventsReachALateRegistration: a revocation or a disconnect
// applied between a connection's handshake and its registration closes it
// as it registers; one accepted afterwards, or not matching, registers.
func TestSessionEventsReachALateRegistration(t *testing.T) {
	cases := map[string]func(s *Server) int{
		"revoke": func(s *Server) int { return s.RevokeSession("alice", 1, "jti") },
		"disconnect": func(s *Server) int {
			return s.DisconnectUser("alice", wire.NewError(wire.ReasonSessionInvalid, "disabled"))
		},
	}
	for name, event := range cases {
		t.Run(name, func(t *testing.T) {
			cfg := testConfig()
			cfg.LoginPolicy = configs.LoginMulti
			s := newTestServer(t, cfg)
			early := s.newConn("alice", 1, "jti", time.Time{}, "")
			other := s.newConn("bob", 1, "jti", time.Time{}, "")
			if n := event(s); n != 0 {
				t.Fatalf("closed %d connections before any registered", n)
			}
			late := s.newConn("alice", 1, "jti", time.Time{}, "")

			ft := newFakeTransport(false)
			runFakeSession(t, s, early, ft)
			endedOnRegistration(t, "the connection accepted before the "+name, ft, `"reason":"session_invalid"`, "session_invalid")
			runFakeSession(t, s, other, newFakeTransport(false))
			runFakeSession(t, s, late, newFakeTransport(false))
			waitFor(t, 5*time.Second, "the two others registered", func() bool { return s.ConnCount() == 2 })
		})
	}
}
