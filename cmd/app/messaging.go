package app

import (
	"context"
	"os"

	"github.com/cloudwego/hertz/pkg/app"
	"github.com/cloudwego/hertz/pkg/common/adaptor"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/nexo-im/nexo/configs"
	"github.com/nexo-im/nexo/gateway"
	"github.com/nexo-im/nexo/gateway/chat"
	"github.com/nexo-im/nexo/gateway/group"
	"github.com/nexo-im/nexo/gateway/state"
	"github.com/nexo-im/nexo/gateway/wire"
	"github.com/nexo-im/nexo/gateway/ws"
	"github.com/nexo-im/nexo/store"
	"github.com/nexo-im/nexo/streams"
	"github.com/nexo-im/nexo/web"
	"github.com/nexo-im/nexo/workers"
)

// buildWebSocket builds the WebSocket gateway; logout closes the live
// sessions of the revoked token.
func (a *App) buildWebSocket(context.Context) error {
	instance := a.consumerName()
	hub, err := ws.New(a.cfg.WS, ws.Deps{
		Auth: a.verifier, Tokens: a.tokens, Logger: a.log, Metrics: a.metrics,
		Presence: store.NewPresence(a.rdb, a.keys, instance, a.cfg.WS.PresenceTTL),
		// Offline resend; a.resender is set by buildMessaging, before serving.
		OnConnect: func(ctx context.Context, c *ws.Conn) {
			if r := a.resender; r != nil {
				r.OnConnect(ctx, c)
			}
		},
	})
	if err != nil {
		return err
	}
	a.ws = hub
	a.onLogout = func(userID string, platformID int, jti string) { hub.RevokeSession(userID, platformID, jti) }
	return nil
}

// buildMessaging wires the message pipeline: the accept step, the save and
// deliver stages on every shard, the message service and its routes, and
// mounts /ws (after every WS handler is registered).
func (a *App) buildMessaging(ctx context.Context) error {
	keys := streams.NewKeys(a.cfg.Redis.KeyPrefix, a.cfg.Streams.Shards)
	seqs := store.NewSeqRepo(a.db)
	msgs := store.NewMessageRepo(a.db)
	accepter := streams.NewAccepter(a.rdb, keys, seqs, a.cfg.Seq.LeaseBlock, a.cfg.TwoPhase.IdempotencyTTL)
	pusher := chat.NewPusher(a.ws, a.log)

	m := workers.NewMetrics(a.metrics)
	a.metrics.MustRegister(workers.NewStreamCollector(a.rdb, keys))
	save := workers.NewSaveHandler(workers.SaveDeps{
		Keys: keys, Redis: a.rdb, Messages: msgs, Seqs: seqs, Allocator: accepter, Pusher: pusher,
		Metrics: m, Log: a.log, MaxAttempts: a.cfg.Save.MaxAttempts,
	})
	groupRepo := store.NewGroupRepo(a.db)
	groupCache := store.NewGroupCache(a.rdb, a.keys, a.cfg.Group.MemberCacheTTL)
	members := group.NewMembers(groupRepo, groupCache, a.cfg.Group, a.metrics, a.log) // send check and visibility bounds
	groupFanout := group.NewFanout(members, a.ws, a.cfg.Group.Push, a.metrics, a.log)
	deliver := workers.NewDeliverHandler(workers.DeliverDeps{Keys: keys, Redis: a.rdb, Pusher: pusher, Groups: groupFanout, Metrics: m, Log: a.log})
	pipeline := workers.NewPipeline(a.rdb, keys, a.cfg.Streams, a.cfg.Save, a.consumerName(), save, deliver, a.log)
	if err := pipeline.EnsureGroups(ctx); err != nil {
		return err
	}
	a.add(component{name: "pipeline", run: pipeline.Run})
	if a.embedded {
		// The in-process Redis dies with the process: give back the seqs its
		// leases reserved but never issued, so a restart continues without a
		// gap (a shared Redis keeps its leases instead).
		a.add(component{name: "seq leases", stop: func(ctx context.Context) error {
			unused, err := accepter.UnusedLeases(ctx)
			if err != nil {
				return err
			}
			for _, l := range unused {
				if err := seqs.ReturnLease(ctx, l.ConversationID, l.Issued, l.Ceiling); err != nil {
					return err
				}
			}
			return nil
		}})
	}

	fanout := chat.NewAsyncFanout(a.cfg.Push.QueueSize, pusher, groupFanout, a.metrics, a.log)
	a.add(component{name: "push queue", run: func(ctx context.Context) error { return fanout.Run(ctx, a.cfg.Push.Workers) }})

	a.mode = chat.NewMode(a.cfg.TwoPhase)
	svc := chat.NewService(chat.Deps{
		Mode: a.mode, Msg: a.cfg.Msg, Accepter: state.NewMentionGate(accepter, members), Saver: msgs, Leaser: seqs, Users: a.users,
		Groups: members, Fanout: fanout, Log: a.log, Registry: a.metrics,
	})
	puller := chat.NewPuller(msgs, seqs, members)
	chat.NewHandlers(svc, puller, a.cfg.HTTP.MaxBodyBytes, a.log).Register(a.server, a.ws)

	groupSvc := group.NewService(group.Deps{Config: a.cfg.Group, Groups: groupRepo, Users: a.users, Members: members,
		Locks: groupCache, Notifier: svc, Log: a.log, Registry: a.metrics})
	group.NewHandlers(groupSvc, a.cfg.HTTP.MaxBodyBytes, a.log).Register(a.server)

	// Sync and state (gateway/state, docs/sync.md): cursors and receipts,
	// newest seq, conversations, recall, offline resend.
	convRepo := store.NewConversationRepo(a.db)
	access := state.NewAccess(members, seqs, state.NewRedisIssued(a.rdb, keys))
	receipts := state.NewReceipts(pusher, convRepo, members, a.cfg.Sync.GroupReceiptMaxMembers, a.log)
	writer := state.NewCursorWriter(store.NewCursorRepo(a.db), receipts, a.cfg.Sync.CursorFlushInterval, a.metrics, a.log)
	a.add(component{name: "cursor writer", run: writer.Run, stop: writer.Close})
	recall := state.NewRecall(state.RecallDeps{Window: a.cfg.Msg.RevokeWindow, Wait: a.cfg.Sync.RevokeWait, Access: access,
		Store: store.NewRevokeRepo(a.db), Roles: members, Notifier: svc, Push: pusher, Saved: seqs})
	state.NewHandlers(state.NewCursors(access, writer, convRepo), state.NewConversations(access, convRepo, writer, members),
		recall, a.cfg.HTTP.MaxBodyBytes, a.log).Register(a.server, a.ws)
	a.resender = state.NewResender(state.ResendDeps{Config: a.cfg.Sync, Reader: convRepo, Writer: writer, Redis: a.rdb,
		Keys: a.keys, MaxQueued: a.cfg.WS.HighWater / 2, Registry: a.metrics, Log: a.log})

	// Without KeepHijackedConns Hertz ignores Close on a hijacked
	// connection, and no server-side close (kick, slow consumer) would work.
	ws.ConfigureHertz(a.server.Hertz())
	a.server.Route("GET", "/ws", a.ws.Handler(), false)
	hub := a.ws
	a.server.Hertz().OnShutdown = append(a.server.Hertz().OnShutdown, func(ctx context.Context) { _ = hub.Shutdown(ctx) })
	return nil
}

// buildWeb serves the web client at / (web/, docs/web.md).
func (a *App) buildWeb(context.Context) error {
	web.Register(a.server)
	return nil
}

// buildObservability serves /metrics and the admin view of the switches.
func (a *App) buildObservability(context.Context) error {
	a.server.Route("GET", "/metrics", adaptor.HertzHandler(promhttp.HandlerFor(a.metrics, promhttp.HandlerOpts{})), false)
	a.server.Route("GET", "/admin/mode", a.adminMode, false)
	return nil
}

// ModeJSON is the answer of GET /admin/mode.
type ModeJSON struct {
	TwoPhaseEnabled    bool `json:"two_phase_enabled"`
	DeliverBeforeSaved bool `json:"deliver_before_saved"`
	FailOpen           bool `json:"fail_open"`
}

// adminMode answers the switches in force. It needs "Authorization: Bearer
// <admin.token>"; with no admin.token configured it is forbidden.
func (a *App) adminMode(ctx context.Context, c *app.RequestContext) {
	want := a.cfg.Admin.Token
	if want == "" || string(c.GetHeader("Authorization")) != "Bearer "+want {
		gateway.WriteError(ctx, c, a.log, wire.NewError(wire.ReasonForbidden, "admin endpoints need Authorization: Bearer <admin.token>"))
		return
	}
	m := a.mode.Get()
	gateway.WriteOK(c, ModeJSON{TwoPhaseEnabled: m.Enabled, DeliverBeforeSaved: m.DeliverBeforeSaved, FailOpen: m.FailOpen})
}

// SetMode replaces the two-phase switches at run time (SIGHUP). Messages in
// flight finish under the route they were accepted with.
func (a *App) SetMode(tp configs.TwoPhase) {
	a.mode.Set(tp)
	a.log.Info("two-phase switches reloaded", "enabled", tp.Enabled, "deliver_before_saved", tp.DeliverBeforeSaved, "fail_open", tp.FailOpen)
}

// Mode returns the live two-phase switches.
func (a *App) Mode() *chat.Mode { return a.mode }

// Addr is the listener's host:port.
func (a *App) Addr() string { return a.listener.Addr().String() }

// consumerName is this process's stable name in every consumer group and in
// presence: streams.consumer_name, else the host name.
func (a *App) consumerName() string {
	if a.cfg.Streams.ConsumerName != "" {
		return a.cfg.Streams.ConsumerName
	}
	host, err := os.Hostname()
	if err != nil || host == "" {
		return "nexo"
	}
	return host
}

// newRegistry is the process's Prometheus registry with Go and process collectors.
func newRegistry() *prometheus.Registry {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return reg
}
