package ws

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/nexo-im/nexo/domain"
	"github.com/nexo-im/nexo/gateway/wire"
)

// pushIdentifiers gives each push kind its frame identifier.
var pushIdentifiers = map[domain.PushKind]int{
	domain.PushMessage:     wire.PushMsg,
	domain.PushAck:         wire.PushAck,
	domain.PushGroupNotify: wire.PushGroupNotify,
	domain.PushTyping:      wire.PushTyping,
	domain.PushError:       wire.PushError,
	domain.PushReadCount:   wire.PushReadCount,
}

// EncodePush encodes p as its frame (identifier by kind; a PushError's
// err_code and err_msg from p.Err through wire.Public), tagged with p.Msg
// for the delivery audit. The error is an unknown kind or a payload JSON
// cannot encode.
func EncodePush(p domain.Push) (Frame, error) {
	code, ok := pushIdentifiers[p.Kind]
	if !ok {
		return Frame{}, fmt.Errorf("encode push: unknown kind %d", p.Kind)
	}
	r := wire.Response{ReqIdentifier: code, Data: p.Data}
	if p.Kind == domain.PushError {
		e := wire.FromError(p.Err)
		r.ErrCode, r.ErrMsg = e.ErrCode, string(e.Reason)
	}
	f, err := EncodeFrame(r)
	if err != nil {
		return f, err
	}
	if p.Msg != nil {
		f = f.WithMsg(*p.Msg)
	}
	return f, nil
}

// Pushes is how the services push: it encodes each domain.Push once with
// EncodePush and hands the frame to a Registry (this instance's, or the
// cluster's, which routes it to the instance holding each connection). It
// has the Registry's guarantees: nothing blocks on a slow connection, and
// pushes from one goroutine to one connection arrive in order. A push that
// cannot be encoded is logged and reaches nobody (0, false).
type Pushes struct {
	reg Registry
	log *slog.Logger
}

// NewPushes returns Pushes over reg.
func NewPushes(reg Registry, log *slog.Logger) *Pushes { return &Pushes{reg: reg, log: log} }

func (p *Pushes) encode(push domain.Push) (Frame, bool) {
	f, err := EncodePush(push)
	if err != nil {
		p.log.Error("encode push", "kind", int(push.Kind), "err", err)
		return f, false
	}
	return f, true
}

// PushToUser queues push to every connection of userID except exceptConn
// ("" excludes none) and returns how many accepted it.
func (p *Pushes) PushToUser(ctx context.Context, userID string, push domain.Push, exceptConn string) int {
	if f, ok := p.encode(push); ok {
		return p.reg.PushToUser(ctx, userID, f, exceptConn)
	}
	return 0
}

// PushToUsers is PushToUser for each of the distinct userIDs, encoding
// once.
func (p *Pushes) PushToUsers(ctx context.Context, userIDs []string, push domain.Push, exceptConn string) int {
	if f, ok := p.encode(push); ok {
		return p.reg.PushToUsers(ctx, userIDs, f, exceptConn)
	}
	return 0
}

// Shared encodes push once and returns what queues that frame to the
// connections of userIDs (as PushToUsers), for a caller that hands one push
// to many users in parts from several goroutines (the group fanout): each
// part then costs no encoding of its own. ok is false when push cannot be
// encoded (logged; it reaches nobody).
func (p *Pushes) Shared(push domain.Push) (send func(ctx context.Context, userIDs []string, exceptConn string) int, ok bool) {
	f, ok := p.encode(push)
	if !ok {
		return nil, false
	}
	return func(ctx context.Context, userIDs []string, exceptConn string) int {
		return p.reg.PushToUsers(ctx, userIDs, f, exceptConn)
	}, true
}

// PushToConn queues push to one connection of userID and reports whether
// it accepted it.
func (p *Pushes) PushToConn(ctx context.Context, userID, connID string, push domain.Push) bool {
	if f, ok := p.encode(push); ok {
		return p.reg.PushToConn(ctx, userID, connID, f)
	}
	return false
}

// Online reports whether userID has a connection on this instance.
func (p *Pushes) Online(userID string) bool { return p.reg.Online(userID) }

// onlineLister is a Registry that answers for a list of users at once.
type onlineLister interface {
	OnlineOf(ctx context.Context, userIDs []string) []string
}

// OnlineOf returns which of userIDs have a connection, in their order: in
// one lookup when the Registry answers lists itself (Server for this
// instance, the cluster router for every instance), else by asking Online
// for each.
func (p *Pushes) OnlineOf(ctx context.Context, userIDs []string) []string {
	if l, ok := p.reg.(onlineLister); ok {
		return l.OnlineOf(ctx, userIDs)
	}
	var online []string
	for _, u := range userIDs {
		if p.reg.Online(u) {
			online = append(online, u)
		}
	}
	return online
}

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
