package ws

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"time"

	"github.com/hertz-contrib/websocket"
	"github.com/nexo-im/nexo/gateway/wire"
)

// appPing is the application-level heartbeat a browser may send as a text
// frame (browsers cannot send WebSocket pings); the server answers appPong.
var (
	appPing = []byte("ping")
	appPong = Frame{data: []byte("pong")}
)

// serve runs one upgraded connection on the goroutine Hertz hands it; the
// connection is closed when serve returns.
func (s *Server) serve(c *Conn, wc *websocket.Conn) {
	if !s.begin() {
		_ = wc.Close()
		return
	}
	defer s.sessions.Done()
	s.run(c, wsTransport{wc})
}

// run is serve's body, kept apart so tests can drive a session over a fake
// transport. It holds only the read loop: an idle connection's goroutine
// sits in it for hours, and the runtime halves a stack at a collection only
// when less than a quarter of it is in use, so the setup and teardown (and
// their logging) live in frames of their own; see docs/gateway.md,
// "The handshake's stack".
func (s *Server) run(c *Conn, t transport) {
	s.openSession(c, t)
	s.closeSession(c, c.safeReadLoop())
}

// openSession registers the session, applying the login policy and any session
// event that reached it first, and starts its timers and OnConnect hook.
//
//go:noinline
func (s *Server) openSession(c *Conn, t transport) {
	c.t = t
	c.ctx, c.cancel = context.WithCancel(s.base)
	t.SetPingHandler(c.onPing)
	t.SetPongHandler(c.onPong)
	t.SetCloseHandler(c.onPeerClose)

	kicked, end := s.reg.add(c, s.kick)
	for _, old := range kicked {
		s.kick(old)
	}
	if end != nil { // a newer connection or a session event got here first
		end(c)
	}
	if s.shuttingDown() {
		// Shutdown may have listed the registry before c was in it.
		c.closeWith("shutdown", Frame{}, CloseServiceRestart, "server_shutdown")
	}
	s.metrics.conns.Inc()
	c.startTimers()
	if s.onConn != nil && end == nil { // no resend or login-policy broadcast for a session already ended
		go s.runOnConnect(c)
	}
	s.log.Debug("ws connected", "conn_id", c.id, "user_id", c.userID, "platform_id", c.platformID,
		"operation_id", c.operationID)
}

// closeSession ends the session after its reader stopped for readCause.
//
//go:noinline
func (s *Server) closeSession(c *Conn, readCause string) {
	c.stopTimers()
	s.reg.remove(c)
	c.finish(readCause)
	c.ended.Store(true)
	s.metrics.conns.Dec()
	cause := c.closeCause()
	s.metrics.disconnects.WithLabelValues(cause).Inc()
	s.log.Debug("ws disconnected", "conn_id", c.id, "user_id", c.userID, "platform_id", c.platformID, "cause", cause)
}

// runOnConnect runs the OnConnect hook; a panic in it ends the hook, not
// the server.
func (s *Server) runOnConnect(c *Conn) {
	defer func() {
		if p := recover(); p != nil {
			s.log.Error("ws OnConnect panicked", "conn_id", c.id, "user_id", c.userID, "panic", fmt.Sprint(p))
		}
	}()
	s.onConn(c.ctx, c)
}

// safeReadLoop is readLoop with a last-resort recover: the server never
// panics on client input.
func (c *Conn) safeReadLoop() (cause string) {
	defer func() {
		if p := recover(); p != nil {
			c.s.log.Error("ws session panicked", "conn_id", c.id, "panic", fmt.Sprint(p))
			cause = "internal_error"
		}
	}()
	return c.readLoop()
}

// readLoop reads frames and handles them one at a time, in arrival order,
// until the connection fails or closes. It returns why it stopped. Only the
// wait for the next frame is here, to keep the idle frame small (see run).
func (c *Conn) readLoop() string {
	for {
		// Anything arriving (frame, pong, ping) within pong_wait keeps the
		// connection; the ping/pong handlers extend the deadline too.
		if err := c.t.SetReadDeadline(time.Now().Add(c.s.cfg.PongWait)); err != nil {
			return "read_error"
		}
		mt, r, err := c.t.NextReader()
		if err != nil {
			return readCause(err)
		}
		if cause := c.readFrame(mt, r); cause != "" {
			return cause
		}
	}
}

// readFrame reads the frame r of type mt whole and answers it; it returns
// why the connection must stop reading, or "" to go on.
//
//go:noinline
func (c *Conn) readFrame(mt int, r io.Reader) string {
	limit := c.s.cfg.ReadLimit
	buf := getBuffer()
	defer putBuffer(buf)
	// Our own limit instead of the library's: its limit writes a close
	// frame from the reader, outside the queue, before we can say why.
	if _, err := buf.ReadFrom(io.LimitReader(r, limit+1)); err != nil {
		return readCause(err)
	}
	c.s.metrics.framesIn.Inc()
	switch {
	case int64(buf.Len()) > limit:
		e := wire.NewError(wire.ReasonBodyTooLong, fmt.Sprintf("frame exceeds ws.read_limit (%d bytes)", limit))
		c.closeWith(string(e.Reason), errorFrame(e), CloseMessageTooBig, string(e.Reason))
	case c.isSealed():
		// Closing: keep reading only to see the client's close frame.
	default:
		c.handleFrame(mt, buf.Bytes())
	}
	return ""
}

// handleFrame answers one inbound frame.
func (c *Conn) handleFrame(mt int, msg []byte) {
	if mt != websocket.TextMessage {
		e := wire.NewError(wire.ReasonBadRequest, "binary frames are not supported; send JSON text frames")
		c.Send(errorFrame(e))
		return
	}
	if bytes.Equal(msg, appPing) {
		c.reply(appPong)
		return
	}
	// Every request counts against the user's limit, shared with HTTP
	// sends and other instances; a refused request is answered under its
	// own req_identifier with retry_after_ms and the connection stays.
	var refused error
	if c.s.limiter != nil {
		refused = c.s.limiter.AllowRequest(c.ctx, c.userID)
	}
	o := c.s.dispatch(c.ctx, c, msg, refused)
	f := c.s.encodeOutcome(o)
	if o.gate {
		c.closeWith(string(o.reason), f, ClosePolicyViolation, string(o.reason))
		return
	}
	c.reply(f)
}

// onPing answers a client's WebSocket ping through the queue.
func (c *Conn) onPing(data string) error {
	_ = c.t.SetReadDeadline(time.Now().Add(c.s.cfg.PongWait))
	c.push(outbound{kind: kindPong, payload: []byte(data)})
	return nil
}

// onPong notes that the client is alive.
func (c *Conn) onPong(string) error {
	return c.t.SetReadDeadline(time.Now().Add(c.s.cfg.PongWait))
}

// onPeerClose answers the client's close frame: queued data frames are
// dropped (the client is leaving) and our close follows what is in flight.
func (c *Conn) onPeerClose(code int, _ string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.setCauseLocked("client_closed")
	if c.sealed {
		return nil
	}
	c.q.filter(func(it outbound) bool { return it.kind != kindData })
	c.q.push(outbound{kind: kindClose, payload: websocket.FormatCloseMessage(code, "")})
	c.sealed, c.closeQueued = true, true
	c.graceTimer = time.AfterFunc(c.s.cfg.WriteTimeout, c.hardClose)
	c.startWriterLocked()
	return nil
}

// finish ends the session after the reader stopped: a graceful close lets
// the writer flush our close frame (bounded by the grace timer); otherwise
// the transport is closed first so a blocked write fails at once. When
// finish returns no goroutine of this connection touches the transport.
func (c *Conn) finish(readCause string) {
	c.mu.Lock()
	c.setCauseLocked(readCause)
	graceful := c.closeQueued
	c.sealed = true
	c.mu.Unlock()
	if !graceful {
		c.hardClose()
	}
	c.writer.Wait()
	c.hardClose()
	c.mu.Lock()
	if c.graceTimer != nil {
		c.graceTimer.Stop()
	}
	c.mu.Unlock()
	c.cancel()
}

// readCause names why a read failed.
func readCause(err error) string {
	var ce *websocket.CloseError
	var ne net.Error
	switch {
	case errors.As(err, &ce):
		return "client_closed"
	case errors.As(err, &ne) && ne.Timeout():
		return "heartbeat_timeout"
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return "client_gone"
	default:
		return "read_error"
	}
}

// Inbound frames are read into pooled buffers: an idle connection holds
// none, and a busy one reuses them (handlers get copies via json.RawMessage).
var bufferPool = sync.Pool{New: func() any { return new(bytes.Buffer) }}

func getBuffer() *bytes.Buffer { return bufferPool.Get().(*bytes.Buffer) }

func putBuffer(b *bytes.Buffer) {
	if b.Cap() > 128<<10 {
		return // an oversized frame's buffer is not kept
	}
	b.Reset()
	bufferPool.Put(b)
}
