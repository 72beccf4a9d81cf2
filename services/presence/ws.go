package presence

import (
	"context"
	"encoding/json"
	"log/slog"
	"sync"
	"time"

	"golang.org/x/time/rate"

	"github.com/nexo-im/nexo/domain"
	"github.com/nexo-im/nexo/gateway/api"
	"github.com/nexo-im/nexo/gateway/wire"
	"github.com/nexo-im/nexo/gateway/ws"
)

// Request and push identifiers (docs/protocol.md).
const (
	// ReqTyping: {conversation_id, typing} — the caller is (not) typing.
	ReqTyping = 1103
	// ReqAppState: {background} — the client went to the background (or
	// came back); offline push then treats this connection as absent.
	ReqAppState = 1104
	// PushTyping: {conversation_id, user_id, typing} to the other members.
	PushTyping = 2103
)

// Typing limits: per connection, a typing indicator at most twice a
// second on average (bursts of 4); more is too_many_requests and dropped.
const (
	typingRate  = 2
	typingBurst = 4
)

// Members lists a group's active members (group.Members).
type Members interface {
	ActiveMembers(ctx context.Context, groupID string) (map[string]int, error)
}

// Registry reaches connections on every instance (ws.Registry; routed
// across instances once the cluster registry wraps it).
type Registry interface {
	PushToUsers(ctx context.Context, userIDs []string, f ws.Frame, exceptConn string) int
}

// Realtime holds the WebSocket side: connection tracking, typing, app state.
type Realtime struct {
	sessions Sessions
	events   Events
	members  Members
	reg      Registry
	refresh  time.Duration
	log      *slog.Logger
	limiters sync.Map // conn id → *rate.Limiter

	mu   sync.Mutex
	live map[string]int // user → this instance's open connections
}

// NewRealtime returns the WebSocket side; refresh is how often Run renews
// the live users' session entries (ws.ping_interval). events may be nil.
func NewRealtime(sessions Sessions, events Events, members Members, reg Registry, refresh time.Duration, log *slog.Logger) *Realtime {
	return &Realtime{sessions: sessions, events: events, members: members, reg: reg, refresh: refresh, log: log,
		live: map[string]int{}}
}

// OnConnect is the ws.Deps.OnConnect hook: it records the connection and
// arranges its removal when ctx ends (the connection closed), emitting
// user_online / user_offline on the user's first connect and last
// disconnect across all instances. It returns at once: no goroutine waits
// per connection (context.AfterFunc), and Run renews every live user's
// sessions in one pipeline per ws.ping_interval.
func (r *Realtime) OnConnect(ctx context.Context, c *ws.Conn) {
	user, conn, platform := c.UserID(), c.ID(), c.PlatformID()
	r.track(user, 1)
	first, err := r.sessions.Connect(ctx, user, conn, platform)
	if err != nil {
		r.log.Warn("record session failed", "user_id", user, "err", err)
	} else if first && r.events != nil {
		r.events.UserOnline(ctx, user, platform)
	}
	context.AfterFunc(ctx, func() {
		r.track(user, -1)
		r.limiters.Delete(conn)
		bg, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		last, err := r.sessions.Disconnect(bg, user, conn)
		if err != nil {
			r.log.Warn("remove session failed", "user_id", user, "err", err)
		} else if last && r.events != nil {
			r.events.UserOffline(bg, user, platform)
		}
	})
}

func (r *Realtime) track(user string, delta int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if n := r.live[user] + delta; n > 0 {
		r.live[user] = n
	} else {
		delete(r.live, user)
	}
}

// Run renews the sessions of every user with a connection here, every
// ws.ping_interval, until ctx ends. A failed renewal is logged; the next
// one (well within ws.presence_ttl) repairs it.
func (r *Realtime) Run(ctx context.Context) error {
	tick := time.NewTicker(r.refresh)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
		r.mu.Lock()
		users := make([]string, 0, len(r.live))
		for u := range r.live {
			users = append(users, u)
		}
		r.mu.Unlock()
		if err := r.sessions.Refresh(ctx, users); err != nil && ctx.Err() == nil {
			r.log.Warn("renew sessions failed", "users", len(users), "err", err)
		}
	}
}

// TypingRequest is the data of WS 1103.
type TypingRequest struct {
	ConversationID string `json:"conversation_id"`
	Typing         bool   `json:"typing"`
}

// Validate requires a conversation ID.
func (t *TypingRequest) Validate() error {
	if _, ok := domain.ConversationSessionType(t.ConversationID); !ok {
		return domain.BadField("conversation_id", "must be a conversation ID (si_a_b or sg_group)")
	}
	return nil
}

// TypingJSON is the data of a 2103 push.
type TypingJSON struct {
	ConversationID string `json:"conversation_id"`
	UserID         string `json:"user_id"`
	Typing         bool   `json:"typing"`
}

// typing handles WS 1103: the caller must be a party or active member of
// the conversation; the indicator goes to the other members' online
// connections (and the caller's other devices), is never stored and has
// no seq. The answer is {"delivered": n connections}.
func (r *Realtime) typing(ctx context.Context, c *ws.Conn, data json.RawMessage) (any, error) {
	var req TypingRequest
	if err := api.DecodeJSON(data, len(data), &req); err != nil {
		return nil, err
	}
	lim, _ := r.limiters.LoadOrStore(c.ID(), rate.NewLimiter(typingRate, typingBurst))
	if !lim.(*rate.Limiter).Allow() {
		return nil, domain.NewError(domain.ErrRateLimited, "typing indicators are limited to 2 per second")
	}
	targets, err := r.audience(ctx, c.UserID(), req.ConversationID)
	if err != nil {
		return nil, err
	}
	f, err := ws.EncodeFrame(wire.Response{ReqIdentifier: PushTyping,
		Data: TypingJSON{ConversationID: req.ConversationID, UserID: c.UserID(), Typing: req.Typing}})
	if err != nil {
		return nil, err
	}
	n := r.reg.PushToUsers(ctx, targets, f, c.ID())
	return map[string]int{"delivered": n}, nil
}

// audience returns who sees user's typing in a conversation.
func (r *Realtime) audience(ctx context.Context, user, conversationID string) ([]string, error) {
	if st, _ := domain.ConversationSessionType(conversationID); st == domain.SessionGroup {
		members, err := r.members.ActiveMembers(ctx, domain.GroupIDOf(conversationID))
		if err != nil {
			return nil, err
		}
		if _, ok := members[user]; !ok {
			return nil, domain.ErrNotConversationMember
		}
		out := make([]string, 0, len(members))
		for id := range members {
			out = append(out, id)
		}
		return out, nil
	}
	a, b, ok := domain.SingleParties(conversationID)
	if !ok || (a != user && b != user) {
		return nil, domain.ErrNotConversationMember
	}
	if a == b {
		return []string{a}, nil
	}
	return []string{a, b}, nil
}

// AppStateRequest is the data of WS 1104.
type AppStateRequest struct {
	Background bool `json:"background"`
}

// appState handles WS 1104: marks this connection backgrounded (true) or
// foreground (false). A user whose every connection is backgrounded gets
// offline_push events as if offline (docs/webhooks.md).
func (r *Realtime) appState(ctx context.Context, c *ws.Conn, data json.RawMessage) (any, error) {
	var req AppStateRequest
	if err := api.DecodeJSON(data, len(data), &req); err != nil {
		return nil, err
	}
	if err := r.sessions.SetBackground(ctx, c.UserID(), c.ID(), c.PlatformID(), req.Background); err != nil {
		return nil, err
	}
	return struct{}{}, nil
}

// WSRouter registers WebSocket handlers (ws.Server).
type WSRouter interface {
	Handle(reqIdentifier int, h ws.HandlerFunc)
}

// Register adds 1103 and 1104.
func (r *Realtime) Register(w WSRouter) {
	w.Handle(ReqTyping, r.typing)
	w.Handle(ReqAppState, r.appState)
}
