package ws

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hertz-contrib/websocket"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/nexo-im/nexo/configs"
	"github.com/nexo-im/nexo/gateway/wire"
)

// fakeTransport is a transport whose writes can be held, for driving a
// session without sockets.
type fakeTransport struct {
	mu      sync.Mutex
	written []string // "data <json>", "ping", "pong", "close <code> <text>"
	batches []int    // frames per WriteTexts call
	hold    chan struct{}
	closed  chan struct{}
	once    sync.Once
	inbound chan []byte
	// ignoreClose makes Close a no-op, as Hertz's hijacked connection is
	// without KeepHijackedConns; kill then ends the reader.
	ignoreClose bool
	kill        chan struct{}
}

func newFakeTransport(hold bool) *fakeTransport {
	ft := &fakeTransport{closed: make(chan struct{}), inbound: make(chan []byte, 16), kill: make(chan struct{})}
	if hold {
		ft.hold = make(chan struct{})
	}
	return ft
}

var errFakeClosed = errors.New("fake transport closed")

func (f *fakeTransport) wait() error {
	if f.hold == nil {
		return nil
	}
	select {
	case <-f.hold:
		return nil
	case <-f.closed:
		return errFakeClosed
	}
}

func (f *fakeTransport) record(s string) {
	f.mu.Lock()
	f.written = append(f.written, s)
	f.mu.Unlock()
}

func (f *fakeTransport) writes() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.written...)
}

func (f *fakeTransport) WriteTexts(texts [][]byte, _ time.Time) error {
	if err := f.wait(); err != nil {
		return err
	}
	f.mu.Lock()
	f.batches = append(f.batches, len(texts))
	f.mu.Unlock()
	for _, data := range texts {
		f.record("data " + string(data))
	}
	return nil
}
func (f *fakeTransport) WriteControl(mt int, data []byte, _ time.Time) error {
	if err := f.wait(); err != nil {
		return err
	}
	switch mt {
	case websocket.PingMessage:
		f.record("ping")
	case websocket.PongMessage:
		f.record("pong")
	case websocket.CloseMessage:
		code := int(data[0])<<8 | int(data[1])
		f.record(fmt.Sprintf("close %d %s", code, data[2:]))
	}
	return nil
}
func (f *fakeTransport) SetReadDeadline(time.Time) error { return nil }
func (f *fakeTransport) NextReader() (int, io.Reader, error) {
	select {
	case b := <-f.inbound:
		return websocket.TextMessage, bytes.NewReader(b), nil
	case <-f.closed:
		return 0, nil, net.ErrClosed
	case <-f.kill:
		return 0, nil, net.ErrClosed
	}
}
func (f *fakeTransport) SetPingHandler(func(string) error)       {}
func (f *fakeTransport) SetPongHandler(func(string) error)       {}
func (f *fakeTransport) SetCloseHandler(func(int, string) error) {}
func (f *fakeTransport) Close() error {
	if !f.ignoreClose {
		f.once.Do(func() { close(f.closed) })
	}
	return nil
}

func (f *fakeTransport) isClosed() bool {
	select {
	case <-f.closed:
		return true
	default:
		return false
	}
}

// startFakeSession runs a session for user on ft and returns its Conn once
// registered, and a channel closed when the session ended.
func startFakeSession(t *testing.T, s *Server, user string, ft *fakeTransport) (*Conn, chan struct{}) {
	t.Helper()
	c := s.newConn(user, 1, "jti", time.Time{}, "")
	done := runFakeSession(t, s, c, ft)
	waitFor(t, 5*time.Second, "registration", func() bool { return s.Online(user) })
	return c, done
}

// runFakeSession runs c's session on tr (a fakeTransport, or one wrapping
// it) and returns a channel closed when the session ended; it does not
// wait for the registration.
func runFakeSession(t *testing.T, s *Server, c *Conn, tr transport) chan struct{} {
	t.Helper()
	done := make(chan struct{})
	go func() {
		defer close(done)
		s.run(c, tr)
	}()
	t.Cleanup(func() {
		_ = tr.Close()
		<-done
	})
	return done
}

func newTestServer(t *testing.T, cfg configs.WS) *Server {
	t.Helper()
	s, err := New(cfg, Deps{Auth: &fakeAuth{}, Metrics: prometheus.NewRegistry()})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

var pushFrame = mustEncode(wire.Response{ReqIdentifier: wire.PushMsg})

// A connection above high water for close_unwritable_after is closed, and
// publishers never block on it meanwhile.
func TestHighWaterClose(t *testing.T) {
	cfg := testConfig()
	cfg.SendQueue, cfg.HighWater, cfg.CloseUnwritableAfter = 16, 4, 50*time.Millisecond
	s := newTestServer(t, cfg)
	ft := newFakeTransport(true) // writes never complete
	c, done := startFakeSession(t, s, "alice", ft)
	for i := 0; i < 6; i++ { // 1 in flight + 5 queued: above 4, below 16
		if !c.Send(pushFrame) {
			t.Fatalf("send %d refused", i)
		}
	}
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("connection above high water was not closed")
	}
	if !ft.isClosed() || testutil.ToFloat64(s.metrics.slowCloses) != 1 {
		t.Fatalf("closed %v, slow closes %v", ft.isClosed(), testutil.ToFloat64(s.metrics.slowCloses))
	}
	if c.Send(pushFrame) {
		t.Fatal("a closed connection accepted a frame")
	}
}

// Falling back below high water disarms the timer.
func TestHighWaterRecovers(t *testing.T) {
	cfg := testConfig()
	cfg.SendQueue, cfg.HighWater, cfg.CloseUnwritableAfter = 16, 2, 50*time.Millisecond
	s := newTestServer(t, cfg)
	ft := newFakeTransport(true)
	c, done := startFakeSession(t, s, "alice", ft)
	for i := 0; i < 5; i++ {
		c.Send(pushFrame)
	}
	close(ft.hold) // the client catches up at once
	waitFor(t, 5*time.Second, "queue drained", func() bool { return len(ft.writes()) == 5 })
	// Twice the window later the connection is still open.
	timer := time.NewTimer(2 * cfg.CloseUnwritableAfter)
	select {
	case <-done:
		t.Fatal("closed after recovering")
	case <-timer.C:
	}
	if !c.Send(pushFrame) {
		t.Fatal("recovered connection refused a frame")
	}
}

// A full queue closes the connection at once.
func TestQueueFullCloses(t *testing.T) {
	cfg := testConfig()
	cfg.SendQueue, cfg.HighWater = 8, 8
	s := newTestServer(t, cfg)
	ft := newFakeTransport(true)
	c, done := startFakeSession(t, s, "alice", ft)
	accepted := 0
	for i := 0; i < 20; i++ {
		if c.Send(pushFrame) {
			accepted++
		}
	}
	if accepted != cfg.SendQueue {
		t.Fatalf("accepted %d frames, want send_queue %d", accepted, cfg.SendQueue)
	}
	<-done
	if testutil.ToFloat64(s.metrics.slowCloses) != 1 {
		t.Fatal("slow consumer close not counted once")
	}
}

// A control frame (kick, error) that does not fit closes the connection
// instead of being lost.
func TestControlFrameWithoutRoomCloses(t *testing.T) {
	cfg := testConfig()
	cfg.SendQueue, cfg.HighWater = 8, 8
	s := newTestServer(t, cfg)
	ft := newFakeTransport(true)
	c, done := startFakeSession(t, s, "alice", ft)
	for i := 0; i < 7; i++ {
		c.Send(pushFrame)
	}
	c.gateClose(wire.NewError(wire.ReasonKicked, "")) // needs 2 slots, 1 left
	<-done
	if got := c.closeCause(); got != "kicked" {
		t.Fatalf("cause %q", got)
	}
}

// A gate close writes what was queued, then the error frame, then the close.
func TestGateCloseOrder(t *testing.T) {
	s := newTestServer(t, testConfig())
	ft := newFakeTransport(true)
	c, done := startFakeSession(t, s, "alice", ft)
	c.Send(pushFrame)
	c.gateClose(wire.NewError(wire.ReasonTokenExpired, ""))
	if c.Send(pushFrame) {
		t.Fatal("frame accepted after the close was queued")
	}
	close(ft.hold)
	waitFor(t, 5*time.Second, "close written", func() bool { return len(ft.writes()) == 3 })
	w := ft.writes()
	if w[0] != "data "+string(pushFrame.Bytes()) || !bytes.Contains([]byte(w[1]), []byte(`"reason":"token_expired"`)) || w[2] != "close 1008 token_expired" {
		t.Fatalf("writes %q", w)
	}
	_ = ft.Close() // the client's close reply would end the read loop
	<-done
}

// syncBuffer is a log sink safe for concurrent writes.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// When the transport ignores Close (Hertz without KeepHijackedConns), the
// server says so in the log instead of failing silently.
func TestUnclosableConnectionLogged(t *testing.T) {
	cfg := testConfig()
	cfg.WriteTimeout = 20 * time.Millisecond
	var logs syncBuffer
	s, err := New(cfg, Deps{Auth: &fakeAuth{}, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	ft := newFakeTransport(false)
	ft.ignoreClose = true
	c := s.newConn("alice", 1, "jti", time.Time{}, "")
	done := make(chan struct{})
	go func() {
		defer close(done)
		s.run(c, ft)
	}()
	waitFor(t, 5*time.Second, "registration", func() bool { return s.Online("alice") })
	c.fail("test")
	waitFor(t, 5*time.Second, "the ConfigureHertz hint", func() bool {
		return strings.Contains(logs.String(), "ConfigureHertz")
	})
	close(ft.kill)
	<-done
}
