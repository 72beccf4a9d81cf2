package ws

import (
	"context"
	"time"

	"github.com/nexo-im/nexo/gateway/wire"
)

// startTimers arms the ping ticker and, when the token has an expiry, the
// expiry timer. Timers instead of a goroutine per connection: an idle
// connection costs its reader goroutine only.
func (c *Conn) startTimers() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.pingTimer = time.AfterFunc(c.s.cfg.PingInterval, c.onPingTick)
	if !c.expiresAt.IsZero() {
		c.expiryTimer = time.AfterFunc(time.Until(c.expiresAt), c.onExpired)
	}
}

func (c *Conn) stopTimers() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.pingTimer != nil {
		c.pingTimer.Stop()
	}
	if c.expiryTimer != nil {
		c.expiryTimer.Stop()
	}
}

// onPingTick runs every ws.ping_interval: it queues a ping, refreshes the
// user's presence, and asks the token store whether the session is still
// active (a backstop for a revocation that RevokeSession did not reach,
// e.g. one made by another instance). A token store error keeps the
// connection: Redis trouble must not disconnect everyone.
func (c *Conn) onPingTick() {
	if !c.push(outbound{kind: kindPing}) {
		return
	}
	c.s.refreshPresence(c)
	if c.s.tokens != nil {
		ctx, cancel := context.WithTimeout(c.ctx, c.s.cfg.WriteTimeout)
		active, err := c.s.tokens.IsActive(ctx, c.userID, c.platformID, c.jti)
		cancel()
		switch {
		case err != nil:
			c.s.log.Warn("ws token check failed", "conn_id", c.id, "user_id", c.userID, "err", err)
		case !active:
			c.gateClose(wire.NewError(wire.ReasonSessionInvalid, "the session was revoked"))
			return
		}
	}
	c.mu.Lock()
	if !c.sealed {
		c.pingTimer.Reset(c.s.cfg.PingInterval)
	}
	c.mu.Unlock()
}

// onExpired closes the connection when its token expires.
func (c *Conn) onExpired() {
	c.gateClose(tokenExpired())
}

// tokenExpired is the gate error of a token that expired while connected.
func tokenExpired() *wire.Error {
	return wire.NewError(wire.ReasonTokenExpired, "the token expired; reconnect with a fresh one")
}

// markOnline records the user's presence when a connection registers.
func (s *Server) markOnline(c *Conn) {
	if s.presence == nil {
		return
	}
	c.user.presenceAt.Store(time.Now().UnixNano())
	ctx, cancel := context.WithTimeout(context.Background(), s.cfg.WriteTimeout)
	defer cancel()
	if err := s.presence.MarkOnline(ctx, c.userID); err != nil {
		s.log.Warn("ws presence online failed", "user_id", c.userID, "err", err)
	}
}

// refreshPresence renews the user's presence TTL, at most once per half
// ping interval per user however many connections the user has.
func (s *Server) refreshPresence(c *Conn) {
	if s.presence == nil {
		return
	}
	now := time.Now().UnixNano()
	last := c.user.presenceAt.Load()
	if now-last < int64(s.cfg.PingInterval/2) || !c.user.presenceAt.CompareAndSwap(last, now) {
		return
	}
	ctx, cancel := context.WithTimeout(c.ctx, s.cfg.WriteTimeout)
	defer cancel()
	if err := s.presence.MarkOnline(ctx, c.userID); err != nil {
		s.log.Warn("ws presence refresh failed", "user_id", c.userID, "err", err)
	}
}

// markOffline removes the user's presence after their last connection on
// this process closed. A connection that registered meanwhile re-marks the
// user, so a concurrent connect never ends up offline.
func (s *Server) markOffline(userID string) {
	if s.presence == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), s.cfg.WriteTimeout)
	defer cancel()
	if err := s.presence.MarkOffline(ctx, userID); err != nil {
		s.log.Warn("ws presence offline failed", "user_id", userID, "err", err)
	}
	if s.reg.online(userID) {
		if err := s.presence.MarkOnline(ctx, userID); err != nil {
			s.log.Warn("ws presence online failed", "user_id", userID, "err", err)
		}
	}
}
