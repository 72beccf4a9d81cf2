package ws

import (
	"context"
	"fmt"
	"hash/maphash"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nexo-im/nexo/configs"
)

// Registry is how the rest of Nexo reaches connected users. The local
// implementation is *Server (this process's connections); a multi-instance
// one can route through a broker to every instance's local registry.
//
// Guarantees: no method blocks on a slow connection (a connection whose
// queue is full is closed instead and not counted); frames pushed to one
// connection from one goroutine arrive in push order; a connection removed
// by a kick or a revocation receives nothing pushed after the removal.
type Registry interface {
	// PushToUser queues f to every connection of userID except the one with
	// id exceptConn ("" excludes none) and returns how many accepted it.
	PushToUser(ctx context.Context, userID string, f Frame, exceptConn string) int
	// PushToUsers is PushToUser for each of userIDs, which must be distinct
	// (a group's member list is); it stops early when ctx is done.
	PushToUsers(ctx context.Context, userIDs []string, f Frame, exceptConn string) int
	// PushToConn queues f to one connection of userID and reports whether it
	// accepted it (false: gone, closing, or closed as a slow consumer).
	PushToConn(ctx context.Context, userID, connID string, f Frame) bool
	// Online reports whether userID has a connection here.
	Online(userID string) bool
	// ConnCount is the number of registered connections.
	ConnCount() int
}

var _ Registry = (*Server)(nil)

// userEntry holds one user's connections and what they share.
type userEntry struct {
	conns []*Conn
}

const shardCount = 64

type shard struct {
	mu    sync.RWMutex
	users map[string]*userEntry
	marks map[string][]sessionMark // by user_id; see endWhere
}

// registry maps user_id -> connections, sharded so pushes to different
// users rarely contend. It applies the login policy on add.
type registry struct {
	policy string
	seed   maphash.Seed
	shards [shardCount]shard
	count  atomic.Int64
}

func newRegistry(policy string) *registry {
	r := &registry{policy: policy, seed: maphash.MakeSeed()}
	for i := range r.shards {
		r.shards[i].users = make(map[string]*userEntry)
		r.shards[i].marks = make(map[string][]sessionMark)
	}
	return r
}

func (r *registry) shard(userID string) *shard {
	return &r.shards[maphash.String(r.seed, userID)%shardCount]
}

// displaces reports whether a new connection c pushes out old under the
// login policy: single_per_platform kicks the same platform, single kicks
// every other connection of the user, multi kicks none.
func (r *registry) displaces(c, old *Conn) bool {
	switch r.policy {
	case configs.LoginMulti:
		return false
	case configs.LoginSingle:
		return true
	default:
		return old.platformID == c.platformID
	}
}

// add registers c and returns the connections it displaces, already
// removed, so a kicked connection gets no push after c is visible.
//
// Connections are ordered by connectedAt, taken when the handshake was
// accepted (before the 101), not when the session registered: a client
// that saw its first connection open before it dialled the second is
// kicked on the first, however late the first session's goroutine runs.
// So c is not registered, and end says how to close it, when a connection
// already here is newer and displaces it (end is kick) or a session event
// remembered by endWhere applies to it (the event's own close).
func (r *registry) add(c *Conn, kick func(*Conn)) (kicked []*Conn, end func(*Conn)) {
	sh := r.shard(c.userID)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	u := sh.users[c.userID]
	if u == nil {
		u = &userEntry{}
	}
	c.user = u
	for _, x := range u.conns {
		if c.connectedAt.Before(x.connectedAt) && r.displaces(x, c) {
			return nil, kick
		}
	}
	for _, m := range sh.marks[c.userID] {
		if c.connectedAt.Before(m.before) && m.match(c) {
			return nil, m.end
		}
	}
	sh.users[c.userID] = u
	keep := make([]*Conn, 0, len(u.conns)+1)
	for _, old := range u.conns {
		if r.displaces(c, old) {
			kicked = append(kicked, old)
		} else {
			keep = append(keep, old)
		}
	}
	u.conns = append(keep, c)
	r.count.Add(int64(1 - len(kicked)))
	return kicked, nil
}

// sessionMark is a session event applied to a user's connections (a
// login-policy kick from another instance, a revocation, a disconnect),
// remembered for markTTL: a connection accepted before the event that
// registers after it — its 101 was answered before its session goroutine
// registered — gets the same end.
type sessionMark struct {
	before time.Time // applies to connections accepted before this
	match  func(*Conn) bool
	end    func(*Conn)
	at     time.Time // when it was recorded (pruning)
}

// markTTL bounds how long a session event is remembered: far longer than a
// session takes from its handshake to registering, even on a stalled box.
const markTTL = 10 * time.Second

// endWhere records m for userID and unregisters and returns the user's
// registered connections it applies to (accepted before m.before and
// matching); the caller ends them with m.end.
func (r *registry) endWhere(userID string, m sessionMark) []*Conn {
	sh := r.shard(userID)
	sh.mu.Lock()
	m.at = time.Now()
	for u, ms := range sh.marks { // events are rare: prune the shard as we go
		ms = slices.DeleteFunc(ms, func(x sessionMark) bool { return m.at.Sub(x.at) > markTTL })
		if len(ms) == 0 {
			delete(sh.marks, u)
		} else {
			sh.marks[u] = ms
		}
	}
	sh.marks[userID] = append(sh.marks[userID], m)
	sh.mu.Unlock()
	return r.removeWhere(userID, func(c *Conn) bool { return c.connectedAt.Before(m.before) && m.match(c) })
}

// remove unregisters c (a no-op if a kick or revocation already did) and
// reports whether the user has no connection left here.
func (r *registry) remove(c *Conn) (last bool) {
	sh := r.shard(c.userID)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	u := sh.users[c.userID]
	if u == nil {
		return true
	}
	for i, x := range u.conns {
		if x == c {
			u.conns = append(u.conns[:i:i], u.conns[i+1:]...)
			r.count.Add(-1)
			break
		}
	}
	if len(u.conns) == 0 {
		delete(sh.users, c.userID)
		return true
	}
	return false
}

// removeWhere unregisters and returns the user's connections matching pred.
func (r *registry) removeWhere(userID string, pred func(*Conn) bool) (removed []*Conn) {
	sh := r.shard(userID)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	u := sh.users[userID]
	if u == nil {
		return nil
	}
	keep := make([]*Conn, 0, len(u.conns))
	for _, c := range u.conns {
		if pred(c) {
			removed = append(removed, c)
		} else {
			keep = append(keep, c)
		}
	}
	u.conns = keep
	r.count.Add(-int64(len(removed)))
	if len(keep) == 0 {
		delete(sh.users, userID)
	}
	return removed
}

// conns appends the user's connections to dst.
func (r *registry) conns(userID string, dst []*Conn) []*Conn {
	sh := r.shard(userID)
	sh.mu.RLock()
	defer sh.mu.RUnlock()
	if u := sh.users[userID]; u != nil {
		dst = append(dst, u.conns...)
	}
	return dst
}

// all returns every registered connection.
func (r *registry) all() []*Conn {
	var out []*Conn
	for i := range r.shards {
		sh := &r.shards[i]
		sh.mu.RLock()
		for _, u := range sh.users {
			out = append(out, u.conns...)
		}
		sh.mu.RUnlock()
	}
	return out
}

func (r *registry) online(userID string) bool {
	sh := r.shard(userID)
	sh.mu.RLock()
	defer sh.mu.RUnlock()
	return sh.users[userID] != nil
}

// PushToUser implements Registry.
func (s *Server) PushToUser(ctx context.Context, userID string, f Frame, exceptConn string) int {
	var buf [8]*Conn
	n := 0
	for _, c := range s.reg.conns(userID, buf[:0]) {
		if c.id == exceptConn {
			continue
		}
		ok := c.Send(f)
		if ok {
			n++
		}
		if f.msg != nil {
			s.auditPush(ctx, c, f.msg, ok)
		}
	}
	return n
}

// auditPush writes the push audit line of one connection: debug when c
// queued the frame, warn when it did not (closing, or its queue was full
// and it was closed as a slow consumer; the client pulls on reconnect).
func (s *Server) auditPush(ctx context.Context, c *Conn, m *MsgRef, queued bool) {
	if s.audit == nil || queued && !s.audit.On(ctx) {
		return
	}
	attrs := []slog.Attr{slog.String("server_msg_id", m.ServerMsgID), slog.String("conversation_id", m.ConversationID),
		slog.Int64("seq", m.Seq), slog.String("user_id", c.userID), slog.Int("platform_id", c.platformID), slog.String("conn_id", c.id)}
	if queued {
		s.audit.OK(ctx, "push", attrs...)
		return
	}
	cause := c.closeCause()
	if cause == "" {
		cause = "closing"
	}
	s.audit.Fail(ctx, "push", fmt.Errorf("not queued: connection %s", cause), attrs...)
}

// PushToUsers implements Registry.
func (s *Server) PushToUsers(ctx context.Context, userIDs []string, f Frame, exceptConn string) int {
	n := 0
	for i, u := range userIDs {
		if i%256 == 255 && ctx.Err() != nil {
			break
		}
		n += s.PushToUser(ctx, u, f, exceptConn)
	}
	return n
}

// PushToConn implements Registry.
func (s *Server) PushToConn(ctx context.Context, userID, connID string, f Frame) bool {
	var buf [8]*Conn
	for _, c := range s.reg.conns(userID, buf[:0]) {
		if c.id == connID {
			ok := c.Send(f)
			if f.msg != nil {
				s.auditPush(ctx, c, f.msg, ok)
			}
			return ok
		}
	}
	return false
}

// Online implements Registry.
func (s *Server) Online(userID string) bool { return s.reg.online(userID) }

// ConnCount implements Registry.
func (s *Server) ConnCount() int { return int(s.reg.count.Load()) }
