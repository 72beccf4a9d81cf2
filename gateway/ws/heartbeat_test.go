package ws

import (
	"testing"
	"time"

	"github.com/hertz-contrib/websocket"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

// A client that never answers pings (and sends nothing) is closed within
// pong_wait; one that answers stays, however many pong_waits pass.
func TestHeartbeat(t *testing.T) {
	cfg := testConfig()
	cfg.PingInterval = 20 * time.Millisecond
	cfg.PongWait = 200 * time.Millisecond
	e := newEnv(t, cfg)

	start := time.Now()
	silent := e.dialWith("mute", 5, time.Time{}, dialOptions{noPong: true})
	alive := e.dial("alice", 5)

	waitFor(t, 5*time.Second, "pings to the silent client", func() bool { return silent.pings.Load() >= 2 })
	code, _, _ := silent.expectClosed(5 * time.Second)
	if code != websocket.CloseAbnormalClosure {
		t.Fatalf("silent client got close code %d; want the connection dropped (1006)", code)
	}
	if elapsed := time.Since(start); elapsed < cfg.PongWait {
		t.Fatalf("closed after %v, before pong_wait %v", elapsed, cfg.PongWait)
	}
	waitFor(t, 5*time.Second, "heartbeat_timeout recorded", func() bool {
		return testutil.ToFloat64(e.srv.metrics.disconnects.WithLabelValues("heartbeat_timeout")) == 1
	})

	// The answering client has been pinged across several pong_waits and is
	// still registered.
	waitFor(t, 10*time.Second, "pings across 3 pong_waits", func() bool {
		return time.Since(start) > 3*cfg.PongWait && alive.pings.Load() >= 10
	})
	if !e.srv.Online("alice") {
		t.Fatal("a client answering pings was closed")
	}
	select {
	case <-alive.done:
		t.Fatalf("answering client disconnected: %v", alive.err)
	default:
	}
}
