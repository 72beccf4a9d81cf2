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

// onPingTick runs every ws.ping_interval: it queues a ping and asks the
// token store whether the session is still active (a backstop for a revocation that RevokeSession did not reach,
// e.g. one made by another instance). A token store error keeps the
// connection: Redis trouble must not disconnect everyone.
func (c *Conn) onPingTick() {
	if !c.push(outbound{kind: kindPing}) {
		return
	}
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
