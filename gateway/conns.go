package gateway

import (
	"context"
	"sync"
	"time"

	"github.com/cloudwego/hertz/pkg/app"
	"github.com/cloudwego/hertz/pkg/network"
)

// connTracker knows which keep-alive connections sit idle between
// requests, so shutdown can close them at once. Hertz counts a keep-alive
// connection waiting for its next request as busy, so without this every
// graceful shutdown with a browser or pooled client attached would wait the
// full http.shutdown_timeout (net/http closes idle connections the same
// way). Connections hijacked by the WebSocket upgrade are not tracked: their
// owner closes them.
type connTracker struct {
	idleTimeout time.Duration

	mu        sync.Mutex
	conns     map[network.Conn]*connState
	lastSweep time.Time
}

type connState struct {
	active int       // requests in flight on the connection
	last   time.Time // when the last request ended
}

func newConnTracker(idleTimeout time.Duration) *connTracker {
	return &connTracker{idleTimeout: idleTimeout, conns: map[network.Conn]*connState{}, lastSweep: time.Now()}
}

// middleware counts the request as in flight on its connection.
func (t *connTracker) middleware(ctx context.Context, c *app.RequestContext) {
	conn := c.GetConn()
	if conn == nil { // in-process requests (tests) have no connection
		c.Next(ctx)
		return
	}
	t.begin(conn)
	defer func() { t.end(conn, c.Hijacked()) }()
	c.Next(ctx)
}

func (t *connTracker) begin(conn network.Conn) {
	t.mu.Lock()
	defer t.mu.Unlock()
	st, ok := t.conns[conn]
	if !ok {
		st = &connState{}
		t.conns[conn] = st
	}
	st.active++
	t.sweepLocked()
}

func (t *connTracker) end(conn network.Conn, hijacked bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	st, ok := t.conns[conn]
	if !ok {
		return
	}
	st.active--
	st.last = time.Now()
	if hijacked {
		delete(t.conns, conn)
	}
}

// sweepLocked forgets connections idle longer than the server's idle
// timeout: Hertz has closed them by then. It runs at most once a minute.
func (t *connTracker) sweepLocked() {
	now := time.Now()
	if now.Sub(t.lastSweep) < time.Minute {
		return
	}
	t.lastSweep = now
	for conn, st := range t.conns {
		if st.active == 0 && now.Sub(st.last) > t.idleTimeout {
			delete(t.conns, conn)
		}
	}
}

// closeIdle closes every tracked connection with no request in flight and
// returns how many it closed. Connections with a request in flight are left
// alone: Hertz closes them after their response once shutdown has begun.
func (t *connTracker) closeIdle() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	n := 0
	for conn, st := range t.conns {
		if st.active == 0 {
			_ = conn.Close()
			delete(t.conns, conn)
			n++
		}
	}
	return n
}
