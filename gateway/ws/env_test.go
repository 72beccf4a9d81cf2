package ws

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	hclient "github.com/cloudwego/hertz/pkg/app/client"
	"github.com/cloudwego/hertz/pkg/app/server"
	"github.com/cloudwego/hertz/pkg/common/config"
	"github.com/cloudwego/hertz/pkg/common/hlog"
	"github.com/cloudwego/hertz/pkg/network/standard"
	"github.com/cloudwego/hertz/pkg/protocol"
	"github.com/hertz-contrib/websocket"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/nexo-im/nexo/configs"
	"github.com/nexo-im/nexo/domain"
	"github.com/nexo-im/nexo/gateway/wire"
)

func init() {
	// Hertz's logger is process-wide; its connection chatter is noise here.
	hlog.SetOutput(io.Discard)
}

// identity is what a fake token stands for.
type identity struct {
	userID     string
	platformID int
	jti        string
	expiresAt  time.Time
}

// fakeAuth maps tokens to identities; tokens named after a domain error
// return it.
type fakeAuth struct {
	mu     sync.Mutex
	tokens map[string]identity
	n      int
}

func (a *fakeAuth) Authenticate(_ context.Context, token string) (string, int, string, time.Time, error) {
	switch token {
	case "invalid":
		return "", 0, "", time.Time{}, fmt.Errorf("parse: %w", domain.ErrTokenInvalid)
	case "expired":
		return "", 0, "", time.Time{}, domain.ErrTokenExpired
	case "revoked":
		return "", 0, "", time.Time{}, domain.ErrTokenRevoked
	case "outage":
		return "", 0, "", time.Time{}, errors.New("redis: connection refused")
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	id, ok := a.tokens[token]
	if !ok {
		return "", 0, "", time.Time{}, domain.ErrTokenInvalid
	}
	return id.userID, id.platformID, id.jti, id.expiresAt, nil
}

// issue returns a token for user on platform, expiring at exp (zero: never).
func (a *fakeAuth) issue(user string, platform int, exp time.Time) (token, jti string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.n++
	jti = "jti-" + strconv.Itoa(a.n)
	token = "tok-" + strconv.Itoa(a.n)
	if a.tokens == nil {
		a.tokens = make(map[string]identity)
	}
	a.tokens[token] = identity{userID: user, platformID: platform, jti: jti, expiresAt: exp}
	return token, jti
}

// fakeTokens is a TokenChecker whose revoked jtis answer inactive.
type fakeTokens struct {
	mu      sync.Mutex
	revoked map[string]bool
	calls   atomic.Int64
}

func (f *fakeTokens) IsActive(_ context.Context, _ string, _ int, jti string) (bool, error) {
	f.calls.Add(1)
	f.mu.Lock()
	defer f.mu.Unlock()
	return !f.revoked[jti], nil
}

func (f *fakeTokens) revoke(jti string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.revoked == nil {
		f.revoked = make(map[string]bool)
	}
	f.revoked[jti] = true
}

// testConfig is the default ws section with intervals small enough for
// tests and large enough not to fire by accident on a loaded machine.
func testConfig() configs.WS {
	cfg := configs.Default().WS
	cfg.PingInterval = time.Hour
	cfg.PongWait = 2 * time.Hour
	cfg.WriteTimeout = 5 * time.Second
	cfg.RateLimit = 0
	return cfg
}

// env is a gateway served by an in-process Hertz server on 127.0.0.1:0.
type env struct {
	t       testing.TB
	srv     *Server
	addr    string
	auth    *fakeAuth
	tokens  *fakeTokens
	metrics *prometheus.Registry
	http    *hclient.Client
}

type envOption func(*envSettings)

type envSettings struct {
	deps     Deps
	standard bool
}

func withStandardTransport() envOption { return func(s *envSettings) { s.standard = true } }

func newEnv(t testing.TB, cfg configs.WS, opts ...envOption) *env {
	t.Helper()
	e := &env{t: t, auth: &fakeAuth{}, tokens: &fakeTokens{}, metrics: prometheus.NewRegistry()}
	set := envSettings{deps: Deps{Auth: e.auth, Tokens: e.tokens, Metrics: e.metrics}}
	for _, o := range opts {
		o(&set)
	}
	srv, err := New(cfg, set.deps)
	if err != nil {
		t.Fatal(err)
	}
	e.srv = srv
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	e.addr = ln.Addr().String()
	hopts := []config.Option{
		server.WithListener(ln), server.WithDisablePrintRoute(true), server.WithExitWaitTime(time.Second),
	}
	if set.standard {
		hopts = append(hopts, server.WithTransport(standard.NewTransporter))
	}
	h := server.New(hopts...)
	ConfigureHertz(h)
	h.GET("/ws", srv.Handler())
	errc := make(chan error, 1)
	go func() { errc <- h.Run() }()
	waitFor(t, 5*time.Second, "hertz running", h.IsRunning)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := srv.Shutdown(ctx); err != nil {
			t.Errorf("ws shutdown: %v", err)
		}
		e.http.CloseIdleConnections()
		_ = h.Shutdown(ctx)
		<-errc
	})
	e.http, err = hclient.NewClient(hclient.WithDialer(standard.NewDialer()), hclient.WithDialTimeout(5*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// waitFor polls cond until it holds or the deadline passes.
func waitFor(t testing.TB, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", d, what)
		}
		time.Sleep(time.Millisecond) // polling interval, not synchronisation
	}
}

// handshake is the outcome of a refused upgrade.
type handshake struct {
	status int
	body   wire.Envelope
}

// client is a raw WebSocket client of the test server.
type client struct {
	t      testing.TB
	conn   *websocket.Conn
	frames chan []byte
	done   chan struct{}
	err    error // why reading stopped; valid after done is closed
	pings  atomic.Int64
}

type dialOptions struct {
	origin    string
	header    map[string]string
	noRead    bool // never read: a slow consumer that also never answers pings
	noPong    bool // read, but count pings instead of answering them
	bufFrames int
}

// dialRaw performs the handshake; it returns the client on 101 and the
// refusal otherwise.
func (e *env) dialRaw(query string, o dialOptions) (*client, *handshake) {
	e.t.Helper()
	req, resp := protocol.AcquireRequest(), protocol.AcquireResponse()
	req.SetRequestURI("http://" + e.addr + "/ws?" + query)
	req.SetMethod("GET")
	if o.origin != "" {
		req.Header.Set("Origin", o.origin)
	}
	for k, v := range o.header {
		req.Header.Set(k, v)
	}
	up := &websocket.ClientUpgrader{}
	up.PrepareRequest(req)
	if err := e.http.Do(context.Background(), req, resp); err != nil {
		e.t.Fatalf("handshake request: %v", err)
	}
	if resp.StatusCode() != 101 {
		h := &handshake{status: resp.StatusCode()}
		if err := json.Unmarshal(resp.Body(), &h.body); err != nil {
			e.t.Fatalf("refusal body %q is not an envelope: %v", resp.Body(), err)
		}
		return nil, h
	}
	conn, err := up.UpgradeResponse(req, resp)
	if err != nil {
		e.t.Fatalf("upgrade: %v", err)
	}
	if o.bufFrames == 0 {
		o.bufFrames = 1024
	}
	c := &client{t: e.t, conn: conn, frames: make(chan []byte, o.bufFrames), done: make(chan struct{})}
	e.t.Cleanup(func() { _ = conn.Close() })
	if o.noPong {
		conn.SetPingHandler(func(string) error { c.pings.Add(1); return nil })
	} else {
		conn.SetPingHandler(func(data string) error {
			c.pings.Add(1)
			return conn.WriteControl(websocket.PongMessage, []byte(data), time.Now().Add(time.Second))
		})
	}
	if !o.noRead {
		go c.readLoop()
	}
	return c, nil
}

// dial connects user on platform with a fresh token and waits until the
// server registered the connection.
func (e *env) dial(user string, platform int) *client {
	e.t.Helper()
	return e.dialWith(user, platform, time.Time{}, dialOptions{})
}

func (e *env) dialWith(user string, platform int, exp time.Time, o dialOptions) *client {
	e.t.Helper()
	token, _ := e.auth.issue(user, platform, exp)
	before := e.userConns(user)
	c, h := e.dialRaw(fmt.Sprintf("token=%s&send_id=%s&platform_id=%d&operation_id=op-dial", token, user, platform), o)
	if h != nil {
		e.t.Fatalf("dial %s/%d refused: %d %+v", user, platform, h.status, h.body)
	}
	// Registered once the user has a connection that was not there before.
	waitFor(e.t, 5*time.Second, "registration of "+user, func() bool {
		return len(e.srv.reg.conns(user, nil)) > 0 && !sameConns(before, e.userConns(user))
	})
	return c
}

func (e *env) userConns(user string) []string {
	var ids []string
	for _, c := range e.srv.reg.conns(user, nil) {
		ids = append(ids, c.id)
	}
	return ids
}

func sameConns(a, b []string) bool { return strings.Join(a, ",") == strings.Join(b, ",") }

func (c *client) readLoop() {
	defer close(c.done)
	for {
		_, msg, err := c.conn.ReadMessage()
		if err != nil {
			c.err = err
			return
		}
		c.frames <- msg
	}
}

// send writes a raw text frame.
func (c *client) send(s string) {
	c.t.Helper()
	if err := c.conn.WriteMessage(websocket.TextMessage, []byte(s)); err != nil {
		c.t.Fatalf("send: %v", err)
	}
}

// request sends a well-formed request frame.
func (c *client) request(id int, msgIncr string, data string) {
	c.t.Helper()
	c.send(fmt.Sprintf(`{"req_identifier":%d,"msg_incr":%q,"operation_id":"op-%s","data":%s}`, id, msgIncr, msgIncr, data))
}

// frame is a decoded server frame.
type frame struct {
	ReqIdentifier int             `json:"req_identifier"`
	MsgIncr       string          `json:"msg_incr"`
	OperationID   string          `json:"operation_id"`
	ErrCode       int             `json:"err_code"`
	ErrMsg        string          `json:"err_msg"`
	Data          json.RawMessage `json:"data"`
	Ts            int64           `json:"ts"`
}

func (f frame) reason() string {
	var d wire.ErrorData
	_ = json.Unmarshal(f.Data, &d)
	return string(d.Reason)
}

// next returns the next raw frame.
func (c *client) nextRaw(d time.Duration) []byte {
	c.t.Helper()
	select {
	case b := <-c.frames:
		return b
	case <-c.done:
		select {
		case b := <-c.frames:
			return b
		default:
		}
		c.t.Fatalf("connection ended while waiting for a frame: %v", c.err)
	case <-time.After(d):
		c.t.Fatalf("no frame within %v", d)
	}
	return nil
}

// next returns the next frame, decoded.
func (c *client) next() frame {
	c.t.Helper()
	b := c.nextRaw(5 * time.Second)
	var f frame
	if err := json.Unmarshal(b, &f); err != nil {
		c.t.Fatalf("frame %q is not JSON: %v", b, err)
	}
	return f
}

// expectClosed waits for the server to end the connection and returns the
// close frame's code and text (code 0: no close frame, the TCP connection
// just ended). Frames still buffered are returned too.
func (c *client) expectClosed(d time.Duration) (code int, text string, rest []frame) {
	c.t.Helper()
	select {
	case <-c.done:
	case <-time.After(d):
		c.t.Fatalf("connection still open after %v", d)
	}
	for {
		select {
		case b := <-c.frames:
			var f frame
			_ = json.Unmarshal(b, &f)
			rest = append(rest, f)
			continue
		default:
		}
		break
	}
	var ce *websocket.CloseError
	if errors.As(c.err, &ce) {
		return ce.Code, ce.Text, rest
	}
	return 0, "", rest
}
