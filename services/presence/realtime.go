package presence

import (
	"context"
	"log/slog"
	"maps"
	"slices"
	"sync"
	"time"

	"golang.org/x/time/rate"

	"github.com/nexo-im/nexo/domain"
	"github.com/nexo-im/nexo/store"
)

// Typing limits: per connection, a typing indicator at most twice a
// second on average (bursts of 4); more is too_many_requests and dropped.
const (
	typingRate  = 2
	typingBurst = 4
)

// Bounds of the writes that follow a connection: its removal, and one
// refresh of every entry (held while disconnects and app-state changes
// wait).
const (
	disconnectTimeout = 5 * time.Second
	refreshTimeout    = 5 * time.Second
)

// Members lists a group's active members (group.Members).
type Members interface {
	ActiveMembers(ctx context.Context, groupID string) (map[string]int, error)
}

// Pusher reaches users' connections on every instance (ws.Pushes over the
// cluster router).
type Pusher interface {
	PushToUsers(ctx context.Context, userIDs []string, p domain.Push, exceptConn string) int
}

// DMGate decides whether a user may write to another in a single chat
// (account.DMGate): a typing indicator is refused as a message would be.
type DMGate interface {
	CheckDM(ctx context.Context, sender, recv string) error
}

// RealtimeDeps are the Realtime's collaborators and settings.
type RealtimeDeps struct {
	Store   Store
	Events  Events // nil: no user_online / user_offline
	Members Members
	Pusher  Pusher
	// DM, when set, refuses single-chat typing indicators the other party
	// does not accept (blocks, dm_policy).
	DM DMGate
	// Refresh is how often Run rewrites this instance's entries
	// (ws.ping_interval); TTL is how long an entry lives without it
	// (ws.presence_ttl), which should be well above Refresh.
	Refresh time.Duration
	TTL     time.Duration
	Log     *slog.Logger
}

// Realtime is the WebSocket side of presence: it keeps this instance's
// connections in the shared record (it is their one writer and runs their
// one refresher), relays typing indicators and records app state.
type Realtime struct {
	store    Store
	events   Events
	members  Members
	push     Pusher
	dm       DMGate
	refresh  time.Duration
	log      *slog.Logger
	limiters sync.Map // conn id → *rate.Limiter

	// writing is held for writing while Run rewrites this instance's
	// entries, and for reading while one entry changes (a disconnect, an
	// app-state change): a refresh never writes back an entry just removed
	// or changed.
	writing sync.RWMutex
	mu      sync.Mutex
	conns   map[string]store.Session // conn id → a connection registered here
	closed  bool
	pending sync.WaitGroup // removals of closed connections under way
}

// NewRealtime returns the WebSocket side of presence.
func NewRealtime(d RealtimeDeps) *Realtime {
	if d.TTL <= d.Refresh {
		d.Log.Warn("ws.presence_ttl should exceed ws.ping_interval: presence is refreshed once per ping interval",
			"presence_ttl", d.TTL, "ping_interval", d.Refresh)
	}
	return &Realtime{store: d.Store, events: d.Events, members: d.Members, push: d.Pusher, dm: d.DM, refresh: d.Refresh, log: d.Log,
		conns: map[string]store.Session{}}
}

// OnConnect records connection connID of userID, registered on this
// instance, and arranges its removal when ctx ends (the connection
// closed), emitting user_online / user_offline on the user's first connect
// and last disconnect across all instances. Pushes from other instances
// find the connection through this record: call it before anything that
// expects them. It returns after one write; no goroutine waits per
// connection (context.AfterFunc), and Run renews every entry.
func (r *Realtime) OnConnect(ctx context.Context, userID, connID string, platformID int) {
	first, err := r.store.Connect(ctx, userID, connID, platformID)
	if err != nil {
		r.log.Warn("record session failed; the next refresh writes it", "user_id", userID, "err", err)
	} else if first && r.events != nil {
		r.events.UserOnline(ctx, userID, platformID)
	}
	r.mu.Lock()
	r.conns[connID] = store.Session{UserID: userID, ConnID: connID, PlatformID: platformID}
	tracked := !r.closed
	if tracked {
		r.pending.Add(1)
	}
	r.mu.Unlock()
	context.AfterFunc(ctx, func() {
		if tracked {
			defer r.pending.Done()
		}
		r.disconnect(context.WithoutCancel(ctx), userID, connID, platformID)
	})
}

func (r *Realtime) disconnect(ctx context.Context, userID, connID string, platformID int) {
	r.limiters.Delete(connID)
	r.writing.RLock()
	defer r.writing.RUnlock()
	r.mu.Lock()
	delete(r.conns, connID)
	r.mu.Unlock()
	ctx, cancel := context.WithTimeout(ctx, disconnectTimeout)
	defer cancel()
	last, err := r.store.Disconnect(ctx, userID, connID)
	if err != nil {
		r.log.Warn("remove session failed", "user_id", userID, "err", err)
	} else if last && r.events != nil {
		r.events.UserOffline(ctx, userID, platformID)
	}
}

// Run rewrites the entries of every connection registered here and renews
// their TTL, every ws.ping_interval, until ctx ends. A failed refresh is
// logged; the next one (well within ws.presence_ttl) repairs it.
func (r *Realtime) Run(ctx context.Context) error {
	tick := time.NewTicker(r.refresh)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
		r.renew(ctx)
	}
}

func (r *Realtime) renew(ctx context.Context) {
	r.writing.Lock()
	defer r.writing.Unlock()
	r.mu.Lock()
	sessions := slices.Collect(maps.Values(r.conns))
	r.mu.Unlock()
	if len(sessions) == 0 {
		return
	}
	wctx, cancel := context.WithTimeout(ctx, min(r.refresh, refreshTimeout))
	defer cancel()
	if err := r.store.Refresh(wctx, sessions); err != nil && ctx.Err() == nil {
		r.log.Warn("renew sessions failed", "sessions", len(sessions), "err", err)
	}
}

// Close waits, bounded by ctx, for the removals of the connections that
// closed, so the record does not show them until their TTL runs out. Call
// it after the WebSocket gateway shut down and before Redis closes.
func (r *Realtime) Close(ctx context.Context) error {
	r.mu.Lock()
	r.closed = true
	r.mu.Unlock()
	done := make(chan struct{})
	go func() {
		r.pending.Wait()
		close(done)
	}()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
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

// TypingResult answers 1103: how many connections the indicator reached.
type TypingResult struct {
	Delivered int `json:"delivered"`
}

// Typing relays userID's typing indicator, sent over its connection
// connID (WS 1103): the caller must be a party or active member of the
// conversation; the indicator goes to the other members' online
// connections (and the caller's other devices), is never stored and has
// no seq. Errors: bad_request, too_many_requests (more than 2 a second per
// connection), not_conversation_member, blocked (a single chat whose other
// party does not accept the caller's messages).
func (r *Realtime) Typing(ctx context.Context, userID, connID string, req TypingRequest) (TypingResult, error) {
	if err := req.Validate(); err != nil {
		return TypingResult{}, err
	}
	lim, _ := r.limiters.LoadOrStore(connID, rate.NewLimiter(typingRate, typingBurst))
	if !lim.(*rate.Limiter).Allow() {
		return TypingResult{}, domain.NewError(domain.ErrRateLimited, "typing indicators are limited to 2 per second")
	}
	targets, err := r.audience(ctx, userID, req.ConversationID)
	if err != nil {
		return TypingResult{}, err
	}
	p := domain.Push{Kind: domain.PushTyping, Data: TypingJSON{ConversationID: req.ConversationID, UserID: userID, Typing: req.Typing}}
	return TypingResult{Delivered: r.push.PushToUsers(ctx, targets, p, connID)}, nil
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
	if r.dm != nil {
		peer := a
		if peer == user {
			peer = b
		}
		if err := r.dm.CheckDM(ctx, user, peer); err != nil {
			return nil, err
		}
	}
	return []string{a, b}, nil
}

// AppStateRequest is the data of WS 1104.
type AppStateRequest struct {
	Background bool `json:"background"`
}

// SetAppState marks connection connID of userID backgrounded (WS 1104
// with background true) or foreground again. A user whose every
// connection is backgrounded gets offline_push events as if offline
// (docs/webhooks.md).
func (r *Realtime) SetAppState(ctx context.Context, userID, connID string, platformID int, req AppStateRequest) (struct{}, error) {
	r.writing.RLock()
	defer r.writing.RUnlock()
	r.mu.Lock()
	if s, ok := r.conns[connID]; ok {
		s.Background = req.Background
		r.conns[connID] = s
	}
	r.mu.Unlock()
	return struct{}{}, r.store.SetBackground(ctx, userID, connID, platformID, req.Background)
}
