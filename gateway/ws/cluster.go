package ws

import (
	"context"
	"time"

	"github.com/nexo-im/nexo/gateway/wire"
)

// The local half of cluster routing (gateway/cluster): what another
// instance asks this one to do with its own connections.

// FrameFromBytes wraps an already-encoded frame (the bytes of another
// instance's Frame, carried in an inbox envelope) without re-encoding it.
// b must be one JSON server frame and must not be modified afterwards.
func FrameFromBytes(b []byte) Frame { return Frame{data: b} }

// OnlineOf returns which of userIDs have a connection on this process, in
// their order (the cluster registry answers for every instance).
func (s *Server) OnlineOf(_ context.Context, userIDs []string) []string {
	var out []string
	for _, u := range userIDs {
		if s.reg.online(u) {
			out = append(out, u)
		}
	}
	return out
}

// LoginPolicy is ws.login_policy as this server applies it.
func (s *Server) LoginPolicy() string { return s.cfg.LoginPolicy }

// KickDisplaced applies the login policy for a connection of userID on
// platformID that registered on another instance at since: every local
// connection of the user that such a connection displaces and that
// registered before since gets 2002 kicked and a close, as if the new
// connection had registered here. A local connection newer than since is
// kept (two logins racing on two instances: the later one wins on both),
// and a local connection accepted before since that registers after this
// call is kicked as it registers. Times are handshake times (Conn.ConnectedAt).
// It returns how many connections it kicked.
func (s *Server) KickDisplaced(userID string, platformID int, since time.Time) int {
	probe := &Conn{userID: userID, platformID: platformID}
	kicked := s.reg.endWhere(userID, sessionMark{before: since, end: s.kick,
		match: func(c *Conn) bool { return s.reg.displaces(probe, c) }})
	for _, c := range kicked {
		s.kick(c)
	}
	return len(kicked)
}

// DisconnectUser closes every local connection of userID with a 3001 frame
// carrying e, then a close 1008 with e's reason (an administrator disabled
// the user, or another instance asked). They receive no push after this
// call, and a connection accepted before it that registers after it is
// closed the same way. It returns how many connections it closed.
func (s *Server) DisconnectUser(userID string, e *wire.Error) int {
	end := func(c *Conn) { c.gateClose(e) }
	gone := s.reg.endWhere(userID, sessionMark{before: time.Now(), end: end, match: func(*Conn) bool { return true }})
	for _, c := range gone {
		end(c)
	}
	return len(gone)
}
