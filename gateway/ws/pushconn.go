package ws

import (
	"time"

	"github.com/nexo-im/nexo/domain"
)

// PushConn is one connection as a service that pushes to it directly sees
// it (offline resend on connect): its identity, its queue, and Send taking
// a domain.Push, encoded with EncodePush.
type PushConn struct{ c *Conn }

// NewPushConn returns c as a PushConn.
func NewPushConn(c *Conn) PushConn { return PushConn{c: c} }

// UserID is the connection's user.
func (p PushConn) UserID() string { return p.c.userID }

// ConnID is the connection's id.
func (p PushConn) ConnID() string { return p.c.id }

// PlatformID is the connection's platform.
func (p PushConn) PlatformID() int { return p.c.platformID }

// ConnectedAt is when the connection was registered (Conn.ConnectedAt).
func (p PushConn) ConnectedAt() time.Time { return p.c.connectedAt }

// Pending is the frames queued or being written (Conn.Pending).
func (p PushConn) Pending() int { return p.c.Pending() }

// Send encodes push and queues it without blocking. It returns false when
// the connection no longer takes frames (Conn.Send). A push that cannot be
// encoded is logged and dropped, and Send returns true: the connection is
// still there, and a caller sending many goes on with the next.
func (p PushConn) Send(push domain.Push) bool {
	f, err := EncodePush(push)
	if err != nil {
		p.c.s.log.Error("encode push", "kind", int(push.Kind), "conn_id", p.c.id, "err", err)
		return true
	}
	return p.c.Send(f)
}
