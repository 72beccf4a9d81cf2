package ws

import (
	"context"
	"io"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nexo-im/nexo/gateway/wire"
)

// transport is the part of *websocket.Conn a session uses, so the session
// logic can be driven by a fake in tests. Only the goroutine holding the
// connection's writing flag calls the Write* methods (the write loop, or the
// reader in reply); only its reader calls the read side; Close may be
// called from any goroutine.
type transport interface {
	// WriteTexts writes each of texts as one WebSocket text frame, in
	// order, with one system call where the transport allows.
	WriteTexts(texts [][]byte, deadline time.Time) error
	WriteControl(messageType int, data []byte, deadline time.Time) error
	SetReadDeadline(t time.Time) error
	NextReader() (messageType int, r io.Reader, err error)
	SetPingHandler(h func(appData string) error)
	SetPongHandler(h func(appData string) error)
	SetCloseHandler(h func(code int, text string) error)
	Close() error
}

// Conn is one authenticated WebSocket connection. Its identity comes from
// the handshake token only. Send is safe from any goroutine; the rest is
// read-only after the handshake.
type Conn struct {
	s           *Server
	id          string
	userID      string
	platformID  int
	jti         string
	operationID string
	expiresAt   time.Time
	connectedAt time.Time // when the handshake was accepted, before the 101 (registry.add)

	t      transport
	ctx    context.Context
	cancel context.CancelFunc
	user   *userEntry // registry entry shared by the user's connections (rate limiter)

	mu          sync.Mutex // guards everything below
	q           ring
	inflight    int  // items the writer took from q and is writing
	writing     bool // the write loop runs, or the reader is writing an answer (reply)
	sealed      bool // no more frames are accepted (closing)
	closeQueued bool // a close frame of ours is queued or written: graceful close
	dead        bool // the transport is closed
	cause       string
	hwTimer     *time.Timer
	hwGen       uint64
	pingTimer   *time.Timer
	expiryTimer *time.Timer
	graceTimer  *time.Timer

	writer    sync.WaitGroup
	closeOnce sync.Once
	ended     atomic.Bool // the session finished (its reader returned)
}

// ID is the connection's id (a UUIDv7 string), unique across instances.
func (c *Conn) ID() string { return c.id }

// UserID is the token's user_id.
func (c *Conn) UserID() string { return c.userID }

// PlatformID is the token's platform_id (equal to the handshake's).
func (c *Conn) PlatformID() int { return c.platformID }

// OperationID is the handshake's operation_id query parameter ("" if none),
// for tracing; each request carries its own in Meta.
func (c *Conn) OperationID() string { return c.operationID }

// Context is cancelled when the connection closes.
func (c *Conn) Context() context.Context { return c.ctx }

// Send queues f for this connection without blocking. It returns false when
// the connection is closing or closed, or when its queue was full (the
// connection is then closed as a slow consumer; the client reconnects and
// pulls what it missed).
func (c *Conn) Send(f Frame) bool {
	if f.IsZero() {
		return false
	}
	return c.push(outbound{kind: kindData, frame: f})
}

// ConnectedAt is when the connection was registered: every push from then
// on reaches it (offline resend needs only what was sent before).
func (c *Conn) ConnectedAt() time.Time { return c.connectedAt }

// Pending is the number of frames queued for this connection or being
// written. Offline resend paces itself on it, so a large resend never
// overflows ws.send_queue.
func (c *Conn) Pending() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.pendingLocked()
}

// setCauseLocked records why the connection ends; the first cause wins.
func (c *Conn) setCauseLocked(cause string) {
	if c.cause == "" {
		c.cause = cause
	}
}

func (c *Conn) setCause(cause string) {
	c.mu.Lock()
	c.setCauseLocked(cause)
	c.mu.Unlock()
}

func (c *Conn) closeCause() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.cause
}

func (c *Conn) isSealed() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.sealed
}

// gateClose sends the gate error e as a 3001 frame and closes the
// connection with 1008 and the reason as close text.
func (c *Conn) gateClose(e *wire.Error) {
	c.closeWith(string(e.Reason), errorFrame(e), ClosePolicyViolation, string(e.Reason))
}

// closeWith queues f (if any) and a close frame with code and text, then
// refuses every further frame. The peer has one write_timeout to read them
// and answer the close; after that the transport is closed regardless. If
// the queue has no room for them the connection is closed at once: a
// control frame that cannot be queued must not be lost silently.
func (c *Conn) closeWith(cause string, f Frame, code int, text string) {
	c.mu.Lock()
	if c.sealed {
		c.mu.Unlock()
		return
	}
	c.setCauseLocked(cause)
	need := 1
	if !f.IsZero() {
		need = 2
	}
	if c.pendingLocked()+need > c.s.cfg.SendQueue {
		c.mu.Unlock()
		c.hardClose()
		return
	}
	if !f.IsZero() {
		c.q.push(outbound{kind: kindData, frame: f})
	}
	c.q.push(outbound{kind: kindClose, payload: formatClose(code, text)})
	c.sealed, c.closeQueued = true, true
	c.graceTimer = time.AfterFunc(c.s.cfg.WriteTimeout, c.hardClose)
	c.startWriterLocked()
	c.mu.Unlock()
}

// hardClose closes the transport now: queued frames are dropped, a blocked
// write or read fails at once, and the session's reader ends.
func (c *Conn) hardClose() { c.closeNow() }

// closeNow is hardClose reporting whether this call closed the transport.
func (c *Conn) closeNow() (closed bool) { return c.closeAfter(nil) }

// closeAfter is closeNow running first (if not nil) just before the
// transport closes, and only if this call closes it: whoever sees the
// session end then also sees what first recorded.
func (c *Conn) closeAfter(first func()) (closed bool) {
	c.closeOnce.Do(func() {
		closed = true
		if first != nil {
			first()
		}
		c.mu.Lock()
		c.dead, c.sealed = true, true
		c.q = ring{}
		c.stopHighWaterLocked()
		c.mu.Unlock()
		if c.t != nil {
			_ = c.t.Close()
			// A closed connection's reader returns at once; if it does not,
			// Hertz ignored the Close (ConfigureHertz was not called).
			time.AfterFunc(2*c.s.cfg.WriteTimeout, func() {
				if !c.ended.Load() {
					c.s.warnUnclosable.Do(func() {
						c.s.log.Error("ws: closed connections stay open; call ws.ConfigureHertz on the Hertz server (KeepHijackedConns)")
					})
				}
			})
		}
	})
	return closed
}

// fail records cause and closes the transport; it reports whether this
// call was the one that closed it.
func (c *Conn) fail(cause string) bool {
	c.setCause(cause)
	return c.closeNow()
}
