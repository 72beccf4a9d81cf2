// Package cluster relays pushes and session events between Nexo instances
// (docs/cluster.md). Relay implements ws.Registry over the local
// *ws.Server: a push reaches the recipients' connections here directly and
// goes to every other instance that holds one of them as ONE envelope per
// target instance per batch, carrying the frame bytes already encoded.
// Session events (login-policy kicks, revocations, disconnects) are
// envelopes on the same bus, streams.Bus (watermill on Redis Streams, NATS
// JetStream or an in-process channel), which the relay uses through Bus.
package cluster

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/nexo-im/nexo/domain"
	"github.com/nexo-im/nexo/gateway/wire"
	"github.com/nexo-im/nexo/gateway/ws"
	"github.com/nexo-im/nexo/store"
	"github.com/nexo-im/nexo/streams"
)

// Envelope kinds (streams.BusEnvelope.Kind).
const (
	kindPush       = "push"       // payload: an encoded frame for users
	kindRevoke     = "revoke"     // end sessions of a revoked token
	kindKick       = "kick"       // login policy: a newer connection elsewhere
	kindDisconnect = "disconnect" // end every session of users (reason, detail)
	kindJoin       = "join"       // an instance joined: re-read the live set
)

// Local is this process's connection registry (*ws.Server).
type Local interface {
	ws.Registry
	OnlineOf(ctx context.Context, userIDs []string) []string
	RevokeSession(userID string, platformID int, jti string) int
	KickDisplaced(userID string, platformID int, since time.Time) int
	DisconnectUser(userID string, e *wire.Error) int
	LoginPolicy() string
}

// Presence finds the live instances holding each user's connections, in
// one round trip (store.Presence with WithLive).
type Presence interface {
	InstancesOf(ctx context.Context, userIDs []string) ([][]string, error)
}

// Membership is the cluster membership (store.Membership).
type Membership interface {
	Self() store.Instance
	Incarnation() string
	Live() []store.Instance
	Recent() []store.Instance
	Refresh(ctx context.Context) error
}

// Bus carries envelopes between instances (*streams.Bus): at least once
// and, per (publisher, inbox), in publish order.
type Bus interface {
	// Subscribe starts reading the inbox of instanceID: every envelope
	// published to it from then on is received, until the bus closes.
	Subscribe(ctx context.Context, instanceID string) (*streams.Inbox, error)
	// Publish sends e to the inbox of instanceID.
	Publish(ctx context.Context, instanceID string, e streams.BusEnvelope) error
}

var _ Bus = (*streams.Bus)(nil)

// Deps are the Relay's collaborators; all are required but Log and
// Metrics.
type Deps struct {
	Local      Local
	Presence   Presence
	Membership Membership
	Bus        Bus
	// MaxAge is cluster.inbox_max_age: older envelopes are dropped.
	MaxAge  time.Duration
	Log     *slog.Logger
	Metrics prometheus.Registerer
}

// Relay is the cluster's ws.Registry. Guarantees beyond ws.Registry's:
// frames to one user from one goroutine keep their order across instances
// (one inbox per instance, read in publish order); an instance that holds
// none of a batch's recipients gets nothing; while this instance is the
// only live one no Redis is read on the push path.
type Relay struct {
	local      Local
	presence   Presence
	membership Membership
	bus        Bus
	maxAge     time.Duration
	log        *slog.Logger
	m          *metrics
	inbox      *streams.Inbox
	out        *domain.Queue[streams.BusPush]
}

var _ ws.Registry = (*Relay)(nil)

// NewRelay builds the relay. Call Start before serving, then Run.
func NewRelay(d Deps) (*Relay, error) {
	if d.Local == nil || d.Presence == nil || d.Membership == nil || d.Bus == nil {
		return nil, errors.New("cluster.NewRelay: Local, Presence, Membership and Bus are required")
	}
	log := d.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	m, err := newMetrics(d.Metrics)
	if err != nil {
		return nil, err
	}
	return &Relay{local: d.Local, presence: d.Presence, membership: d.Membership, bus: d.Bus, maxAge: d.MaxAge, log: log, m: m,
		out: domain.NewQueue[streams.BusPush](outboxSize)}, nil
}

// Start subscribes to this instance's inbox (every envelope published
// from now on is received) and tells the other live instances that this
// one joined, so they route to it at once rather than at their next
// heartbeat. Call it before serving connections.
func (r *Relay) Start(ctx context.Context) error {
	// The subscription outlives ctx (a start-up context): it ends when the
	// bus is closed.
	in, err := r.bus.Subscribe(ctx, r.membership.Self().ID)
	if err != nil {
		return err
	}
	r.inbox = in
	r.broadcast(ctx, streams.BusEnvelope{Kind: kindJoin})
	return nil
}

// Run handles inbox envelopes and flushes the outbox until ctx is done or
// the subscription ends; it returns after publishing what is still queued.
func (r *Relay) Run(ctx context.Context) error {
	fctx, stopFlush := context.WithCancel(ctx)
	flushed := make(chan struct{})
	go func() { r.flushLoop(fctx); close(flushed) }()
	defer func() { stopFlush(); <-flushed }()
	for {
		d, ok := r.inbox.Receive(ctx)
		if !ok {
			return nil
		}
		r.handle(ctx, d.Envelope)
		d.Ack()
	}
}

// alone reports whether this is the only live instance: pushes then stay
// local without a presence lookup. An instance that joins announces itself
// (Start) before it serves, so this turns false before anyone connects there.
func (r *Relay) alone() bool {
	live := r.membership.Live()
	self := r.membership.Self()
	return len(live) == 0 || len(live) == 1 && live[0].ID == self.ID && live[0].Epoch == self.Epoch
}

// PushToUser implements ws.Registry: local connections now, other
// instances through their inboxes. The count is the local connections that
// accepted f plus one per remote instance it was published to.
func (r *Relay) PushToUser(ctx context.Context, userID string, f ws.Frame, exceptConn string) int {
	return r.PushToUsers(ctx, []string{userID}, f, exceptConn)
}

// PushToUsers implements ws.Registry: local connections at once, the
// other instances through the outbox (outbox.go: batched, one presence
// lookup and one envelope per target instance per flush). The count is the
// local connections that accepted f, plus one when f was queued for other
// instances (or, with the outbox full, one per instance it was published
// to).
func (r *Relay) PushToUsers(ctx context.Context, userIDs []string, f ws.Frame, exceptConn string) int {
	n := r.local.PushToUsers(ctx, userIDs, f, exceptConn)
	if r.alone() || len(userIDs) == 0 || f.IsZero() {
		return n
	}
	// The item outlives the call: it keeps its own copy of the users.
	it := streams.BusPush{Users: slices.Clone(userIDs), Except: exceptConn, Frame: f.Bytes()}
	if ref, ok := f.Msg(); ok {
		it.Msg = &ref
	}
	if r.out.Put(it) {
		return n + 1
	}
	// The outbox is full: route this one now.
	return n + r.route(ctx, userIDs, streams.BusEnvelope{Kind: kindPush, Except: exceptConn, Msg: it.Msg, Payload: it.Frame})
}

// route publishes e to every other live instance holding any of userIDs,
// each envelope naming only that instance's users.
func (r *Relay) route(ctx context.Context, userIDs []string, e streams.BusEnvelope) int {
	at, err := r.presence.InstancesOf(ctx, userIDs)
	if err != nil {
		r.m.errors.WithLabelValues("presence").Inc()
		r.log.Warn("cluster: presence lookup failed; remote recipients will catch up by resend and pull", "users", len(userIDs), "err", err)
		return 0
	}
	self := r.membership.Incarnation()
	var targets map[string][]string
	for i, ins := range at {
		for _, in := range ins {
			if in == self {
				continue
			}
			if targets == nil {
				targets = make(map[string][]string, 2)
			}
			targets[in] = append(targets[in], userIDs[i])
		}
	}
	sent := 0
	for in, users := range targets {
		id, _, _ := store.ParseIncarnation(in)
		e.Users = users
		if r.publish(ctx, id, e) {
			sent++
		}
	}
	return sent
}

// PushToConn implements ws.Registry for a connection of this instance.
// Connection IDs are not in presence, so a connection elsewhere is not
// reached (nothing in Nexo pushes to another instance's connection).
func (r *Relay) PushToConn(ctx context.Context, userID, connID string, f ws.Frame) bool {
	return r.local.PushToConn(ctx, userID, connID, f)
}

// Online implements ws.Registry: whether userID has a connection on this
// instance. OnlineOf answers for the cluster.
func (r *Relay) Online(userID string) bool { return r.local.Online(userID) }

// OnlineOf returns which of userIDs are connected to any live instance, in
// their order (one presence lookup; none while this instance is alone).
func (r *Relay) OnlineOf(ctx context.Context, userIDs []string) []string {
	if r.alone() {
		return r.local.OnlineOf(ctx, userIDs)
	}
	at, err := r.presence.InstancesOf(ctx, userIDs)
	if err != nil {
		r.m.errors.WithLabelValues("presence").Inc()
		return r.local.OnlineOf(ctx, userIDs)
	}
	var out []string
	for i, u := range userIDs {
		if len(at[i]) > 0 || r.local.Online(u) {
			out = append(out, u)
		}
	}
	return out
}

// ConnCount implements ws.Registry: this instance's connections.
func (r *Relay) ConnCount() int { return r.local.ConnCount() }

// RevokeSession closes the sessions of a revoked token (logout, refresh,
// a newer login) on every instance: here at once, elsewhere within the
// bus latency. platformID <= 0 and jti "" match all, as in ws.Server.
func (r *Relay) RevokeSession(ctx context.Context, userID string, platformID int, jti string) {
	r.local.RevokeSession(userID, platformID, jti)
	r.broadcast(ctx, streams.BusEnvelope{Kind: kindRevoke, Users: []string{userID}, Platform: platformID, JTI: jti})
}

// DisconnectUser ends every session of userID on every instance with a
// 3001 frame carrying e and a close 1008 (e.g. an administrator disabled
// the user). Other instances act within the bus latency (well under 1 s).
func (r *Relay) DisconnectUser(ctx context.Context, userID string, e *wire.Error) {
	r.local.DisconnectUser(userID, e)
	r.broadcast(ctx, streams.BusEnvelope{Kind: kindDisconnect, Users: []string{userID}, Reason: string(e.Reason), Detail: e.Detail})
}

// SessionStarted applies the login policy across instances for a
// connection that registered here: the other instances kick what it
// displaces (2002 kicked, then close). ws.Deps.OnConnect calls it.
func (r *Relay) SessionStarted(ctx context.Context, c *ws.Conn) {
	if r.local.LoginPolicy() == "multi" {
		return
	}
	r.broadcast(ctx, streams.BusEnvelope{Kind: kindKick, Users: []string{c.UserID()}, Platform: c.PlatformID(), Since: c.ConnectedAt()})
}

// broadcast publishes e to every other live instance and to those that
// left the live set within the last minute (Membership.Recent): a session
// event is never repeated, and an instance whose heartbeat lapsed in a
// stall may still hold the session; an envelope to one that is really
// gone waits in its bounded inbox and ages out. Session events are rare,
// so they skip the presence lookup: a connection whose presence write
// failed is still reached. The instances are published to in parallel:
// an event's latency is one publish, not one per instance.
func (r *Relay) broadcast(ctx context.Context, e streams.BusEnvelope) {
	self := r.membership.Self()
	var wg sync.WaitGroup
	for _, in := range slices.Concat(r.membership.Live(), r.membership.Recent()) {
		if in.ID != self.ID {
			wg.Go(func() { r.publish(ctx, in.ID, e) })
		}
	}
	wg.Wait()
}

func (r *Relay) publish(ctx context.Context, instanceID string, e streams.BusEnvelope) bool {
	e.At = time.Now()
	e.From = r.membership.Incarnation()
	if err := r.bus.Publish(ctx, instanceID, e); err != nil {
		r.m.errors.WithLabelValues("publish").Inc()
		r.log.Warn("cluster: publish failed", "to", instanceID, "kind", e.Kind, "err", err)
		return false
	}
	r.m.sent.WithLabelValues(e.Kind).Inc()
	return true
}

// handle applies one inbox envelope to local connections only.
func (r *Relay) handle(ctx context.Context, e streams.BusEnvelope) {
	r.m.received.WithLabelValues(e.Kind).Inc()
	if r.maxAge > 0 && time.Since(e.At) > r.maxAge {
		r.m.stale.Inc()
		return
	}
	switch e.Kind {
	case kindPush: // one push: the outbox's synchronous fallback
		r.pushLocal(ctx, streams.BusPush{Users: e.Users, Except: e.Except, Msg: e.Msg, Frame: e.Payload})
	case kindPushes:
		items, err := streams.DecodeBusPushes(e.Payload)
		if err != nil {
			r.m.errors.WithLabelValues("decode").Inc()
			r.log.Warn("cluster: dropped a malformed pushes envelope", "from", e.From, "err", err)
			return
		}
		for _, it := range items {
			r.pushLocal(ctx, it)
		}
	case kindRevoke:
		for _, u := range e.Users {
			r.local.RevokeSession(u, e.Platform, e.JTI)
		}
	case kindKick:
		for _, u := range e.Users {
			r.local.KickDisplaced(u, e.Platform, e.Since)
		}
	case kindDisconnect:
		for _, u := range e.Users {
			r.local.DisconnectUser(u, wire.NewError(wire.Reason(e.Reason), e.Detail))
		}
	case kindJoin:
		if err := r.membership.Refresh(ctx); err != nil {
			r.log.Warn("cluster: reading live instances after a join failed", "from", e.From, "err", err)
		}
	default:
		r.log.Warn("cluster: unknown envelope kind", "kind", e.Kind, "from", e.From)
	}
}

// pushLocal hands a push from the inbox to this instance's connections of
// its users, counting users it found no connection of. A sender's copy
// whose only connection here is the excepted one (the sending connection)
// is not a miss.
func (r *Relay) pushLocal(ctx context.Context, it streams.BusPush) {
	f := ws.FrameFromBytes(it.Frame)
	if it.Msg != nil {
		f = f.WithMsg(*it.Msg)
	}
	for _, u := range it.Users {
		if r.local.PushToUser(ctx, u, f, it.Except) == 0 && (it.Except == "" || !r.local.Online(u)) {
			r.m.noConn.Inc()
		}
	}
}
