package ws

import (
	"context"
	"testing"
	"time"

	"github.com/hertz-contrib/websocket"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/nexo-im/nexo/gateway/wire"
)

// A client's close is answered with the same code and the connection is
// unregistered.
func TestClientClose(t *testing.T) {
	e := newEnv(t, testConfig())
	c := e.dial("alice", 5)
	msg := websocket.FormatCloseMessage(websocket.CloseNormalClosure, "bye")
	if err := c.conn.WriteControl(websocket.CloseMessage, msg, time.Now().Add(time.Second)); err != nil {
		t.Fatal(err)
	}
	if code, _, _ := c.expectClosed(5 * time.Second); code != CloseNormal {
		t.Fatalf("close answered with %d", code)
	}
	waitFor(t, 5*time.Second, "unregistration", func() bool { return !e.srv.Online("alice") })
	waitFor(t, 5*time.Second, "client_closed recorded", func() bool {
		return testutil.ToFloat64(e.srv.metrics.disconnects.WithLabelValues("client_closed")) == 1
	})
}

// Shutdown closes every connection with 1012 and refuses new upgrades.
func TestShutdown(t *testing.T) {
	e := newEnv(t, testConfig())
	a := e.dial("alice", 5)
	b := e.dial("bob", 5)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := e.srv.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	for _, c := range []*client{a, b} {
		if code, text, _ := c.expectClosed(5 * time.Second); code != CloseServiceRestart || text != "server_shutdown" {
			t.Fatalf("close %d %q", code, text)
		}
	}
	if e.srv.ConnCount() != 0 {
		t.Fatalf("%d connections after shutdown", e.srv.ConnCount())
	}
	token, _ := e.auth.issue("carol", 5, time.Time{})
	_, h := e.dialRaw("token="+token+"&platform_id=5", dialOptions{})
	if h == nil || h.status != 503 || h.body.ErrMsg != string(wire.ReasonServerBusy) {
		t.Fatalf("handshake during shutdown: %+v", h)
	}
}
