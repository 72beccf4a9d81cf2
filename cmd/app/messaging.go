package app

import (
	"bytes"
	"context"
	"crypto/subtle"
	"time"

	"github.com/cloudwego/hertz/pkg/app"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/nexo-im/nexo/configs"
	"github.com/nexo-im/nexo/domain"
	"github.com/nexo-im/nexo/gateway/api"
	"github.com/nexo-im/nexo/gateway/auth"
	"github.com/nexo-im/nexo/gateway/limits"
	"github.com/nexo-im/nexo/gateway/routes"
	"github.com/nexo-im/nexo/gateway/wire"
	"github.com/nexo-im/nexo/gateway/ws"
	"github.com/nexo-im/nexo/services/actions"
	"github.com/nexo-im/nexo/services/chat"
	"github.com/nexo-im/nexo/services/group"
	"github.com/nexo-im/nexo/services/sync"
	"github.com/nexo-im/nexo/store"
	"github.com/nexo-im/nexo/streams"
	"github.com/nexo-im/nexo/web"
	"github.com/nexo-im/nexo/workers"
)

// buildWebSocket builds this process's WebSocket gateway; the cluster
// relay (buildRelay) wraps it.
func (a *App) buildWebSocket(context.Context) error {
	a.audit = a.newAudit()
	hub, err := ws.New(a.cfg.WS, ws.Deps{
		Audit: a.audit, Auth: a.verifier, Tokens: auth.SessionChecker{Tokens: a.tokens, Floors: a.tokens}, Logger: a.log, Metrics: a.metrics, Limiter: a.userLimit,
		// The presence record first (pushes from other instances find the
		// connection through it), then the login policy on the other
		// instances, then offline resend; a.realtime, a.relay and
		// a.resender are set by later steps, before serving.
		OnConnect: func(ctx context.Context, c *ws.Conn) {
			if rt := a.realtime; rt != nil {
				rt.OnConnect(ctx, c.UserID(), c.ID(), c.PlatformID())
			}
			if r := a.relay; r != nil {
				r.SessionStarted(ctx, c)
			}
			if r := a.resender; r != nil {
				r.OnConnect(ctx, ws.NewPushConn(c))
			}
		},
	})
	if err != nil {
		return err
	}
	a.ws = hub
	return nil
}

// chat.Pusher is the stages' Pusher.
var _ workers.Pusher = (*chat.Pusher)(nil)

// buildMessaging wires the message pipeline: the accept step, the save and
// deliver stages on every shard, the message service and its routes, and
// mounts /ws (after every WS handler is registered).
func (a *App) buildMessaging(ctx context.Context) error {
	keys := streams.NewKeys(a.cfg.Redis.KeyPrefix, a.cfg.Streams.Shards).WithNames(a.cfg.Streams.Names)
	seqs := store.NewSeqRepo(a.db)
	msgs := store.NewMessageRepo(a.db)
	accepter := streams.NewAccepter(a.rdb, keys, seqs, a.cfg.Seq.LeaseBlock, a.cfg.TwoPhase.IdempotencyTTL, a.acceptOptions(msgs)...)
	a.idleTrims = append(a.idleTrims, accepter.ReleaseIdle)
	a.learnRecordsKept(ctx, accepter)
	// The pipeline's pushes, encoded by the gateway and routed to the
	// instance holding each connection (a.relay wraps the local registry).
	pusher := chat.NewPusher(ws.NewPushes(a.relay, a.log))

	m := workers.NewMetrics(a.metrics)
	audit := a.audit
	a.metrics.MustRegister(workers.NewStreamCollector(a.rdb, keys))
	hooks := a.buildWebhooks()
	// Repeat offenders (limits.dead_letters): counted by the save stage,
	// refused at send from a copy of the blocked set refreshed every second.
	deadSenders := store.NewDeadSenders(a.rdb, a.keys, a.cfg.Limits.DeadLetters, a.log)
	if deadSenders != nil {
		a.add(component{name: "dead-letter sender blocks", run: deadSenders.Run})
	}
	searchSvc, indexHook, err := a.buildSearch(ctx)
	if err != nil {
		return err
	}
	a.search = searchSvc
	mediaParts, err := a.buildMedia(ctx)
	if err != nil {
		return err
	}
	// What the save stage's commit adds for later stages (and the
	// synchronous send adds itself): search, push, webhooks, media refs.
	after := joinAfter(hooks.workerAfter(), indexHook, a.pushHook(), mediaParts.afterSave())
	groupRepo := store.NewGroupRepo(a.db)
	groupCache := store.NewGroupCache(a.rdb, a.keys, a.cfg.Group.MemberCacheTTL)
	members := group.NewMembers(groupRepo, groupCache, a.cfg.Group, a.metrics, a.log) // send check and visibility bounds
	groupFanout := group.NewFanout(members, ws.NewPushes(a.relay, a.log), a.cfg.Group.Push, a.metrics)
	convRepo := store.NewConversationRepo(a.db)
	// recv_msg_opt 1 of single chats, read by the deliver stage and the
	// synchronous path's pushes without a query per message.
	noPush := sync.NewNoPushCache(convRepo, a.cfg.Sync.RecvOptCacheTTL, a.log)
	deliver := workers.NewDeliverHandler(workers.DeliverDeps{Keys: keys, Redis: a.rdb, Pusher: pusher, Groups: groupFanout, Filter: noPush, Metrics: m, Log: a.log, Audit: audit})
	save := workers.NewSaveHandler(workers.SaveDeps{
		Keys: keys, Redis: a.rdb, Messages: msgs, Seqs: seqs, Allocator: accepter, Accepts: accepter, Pusher: pusher,
		Metrics: m, Log: a.log, After: after,
		BatchWait: a.cfg.Save.BatchWait, BatchSize: a.cfg.Save.BatchSize, DeadSenders: deadSenders,
		Deliver: deliver, // saved messages skip to_deliver (docs/pipeline.md)
	})
	pipeline := workers.NewPipeline(a.rdb, keys, a.cfg.Streams, a.cfg.Save, a.consumerName(), save, deliver, a.log)
	if !a.embedded { // the embedded Redis starts empty every time
		if err := streams.CheckNames(ctx, a.rdb, keys); err != nil {
			return err
		}
		if err := streams.CheckShardCount(ctx, a.rdb, keys); err != nil {
			return err
		}
	}
	if err := pipeline.EnsureGroups(ctx); err != nil {
		return err
	}
	if !a.embedded {
		// One instance per shard (docs/cluster.md, "Shard ownership"): a
		// lease per shard over the live instances, renewed with the
		// heartbeat; membership changes rebalance at once.
		member := a.member
		pipeline.UseOwnership(workers.Ownership{
			Self:   member.Self().ID,
			Leases: streams.NewShardLeases(a.rdb, keys),
			Live: func() []string {
				live := member.Live()
				ids := make([]string, len(live))
				for i, in := range live {
					ids[i] = in.ID
				}
				return ids
			},
			TTL: a.cfg.Cluster.InstanceTTL, Interval: a.cfg.Cluster.HeartbeatInterval,
		})
		member.OnChange(func([]store.Instance) { pipeline.Rebalance() })
		a.onDrain = append(a.onDrain, func(ctx context.Context) { _ = pipeline.Release(ctx) })
		leases := streams.NewShardLeases(a.rdb, keys)
		a.shardsOf = func(ctx context.Context) map[string][]int {
			out := map[string][]int{}
			owners, err := leases.Owners(ctx)
			if err != nil {
				return out
			}
			for _, o := range owners {
				if o.Holder != "" {
					out[o.Holder] = append(out[o.Holder], o.Shard)
				}
			}
			return out
		}
	}
	a.pipeline = pipeline
	a.shardLeases = streams.NewShardLeases(a.rdb, keys)
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

	fanout := chat.NewAsyncFanout(a.cfg.Push.QueueSize, a.cfg.Push.Workers, pusher, groupFanout, noPush, a.metrics, a.log)
	a.add(component{name: "push queue", run: func(ctx context.Context) error { return fanout.Run(ctx) }})

	a.mode = chat.NewMode(a.cfg.TwoPhase)
	inflight := streams.NewInFlightReader(a.rdb, keys)
	puller := chat.NewPuller(msgs, seqs, members, inflight)
	actionRepo := store.NewActionRepo(a.db)
	// Pulls show edits' marks, reactions, deletes and quotes' state
	// (docs/actions.md); a quoted reply's snapshot is taken through a pull.
	puller.UseActions(actions.NewAnnotator(actionRepo, msgs))
	svc := chat.NewService(chat.Deps{
		Mode: a.mode, Msg: a.cfg.Msg, Accepter: accepter, Saver: msgs, Leaser: seqs, Users: a.users,
		Groups: members, Fanout: fanout, Originals: msgs, Records: accepter, Log: a.log, Audit: audit, Registry: a.metrics,
		Hook: hooks.beforeSend(), After: chatAfter(after, a.rdb), DeadSenders: deadSenders,
		DM: a.dmGate, Words: a.words, Quotes: puller, Objects: mediaParts.objects(),
	})
	routes.NewChat(svc, puller, a.cfg.HTTP.MaxBodyBytes, a.userLimit, a.log).Register(a.server, a.ws)
	a.buildReports(puller, msgs, hooks)
	a.registerMedia(mediaParts, puller)

	a.chat, a.members = svc, members
	groupSvc := group.NewService(group.Deps{Config: a.cfg.Group, Groups: groupRepo, Users: a.users, Members: members,
		Shared: store.NewContacts(a.db), Blocks: a.blocks, Added: limits.NewAdded(a.limiter, limits.Rule{Rate: a.cfg.Limits.GroupAdded.Rate,
			Period: a.cfg.Limits.GroupAdded.Period, Burst: a.cfg.Limits.GroupAdded.Burst}),
		Locks: groupCache, Notifier: svc, Log: a.log, Registry: a.metrics, Words: a.words})
	invites := limits.NewInvites(a.limiter, limits.Rule{Rate: a.cfg.Limits.GroupInvite.Rate,
		Period: a.cfg.Limits.GroupInvite.Period, Burst: a.cfg.Limits.GroupInvite.Burst})
	routes.Group(a.server, groupSvc, a.cfg.HTTP.MaxBodyBytes, invites, a.log)
	a.groups = groupSvc
	a.registerSearch(searchSvc)

	// Sync (docs/sync.md): cursors and receipts, newest seq,
	// conversations, recall, offline resend.
	access := sync.NewAccess(members, seqs, sync.NewRedisIssued(a.rdb, keys), a.users)
	receipts := sync.NewReceipts(pusher, convRepo, members, a.cfg.Sync.GroupReceiptMaxMembers, a.log)
	writer := sync.NewCursorWriter(sync.CursorWriterDeps{Store: store.NewCursorRepo(a.db), Sink: receipts,
		Window: a.cfg.Sync.CursorFlushInterval, Saved: convRepo, Audit: audit, Registry: a.metrics, Log: a.log})
	a.add(component{name: "cursor writer", run: writer.Run, stop: writer.Close})
	// Group senders get coalesced read counts instead of per-reader
	// receipts (docs/sync.md, "Read counts").
	readCounts := actions.NewReadCounts(actionRepo, members, ws.NewPushes(a.relay, a.log), a.rdb, a.keys, a.cfg.Sync.ReadCountInterval, a.log)
	receipts.UseReadCounts(readCounts)
	a.add(component{name: "read counts", run: readCounts.Run})
	routes.NewActions(actions.NewService(actions.Deps{Msg: a.cfg.Msg, Wait: a.cfg.Sync.RevokeWait, Access: access,
		Store: actionRepo, Messages: msgs, Roles: members, Viewers: members, Notifier: svc}), a.cfg.HTTP.MaxBodyBytes, a.log).Register(a.server, a.ws)
	recall := sync.NewRecall(sync.RecallDeps{Window: a.cfg.Msg.RevokeWindow, Wait: a.cfg.Sync.RevokeWait, Access: access,
		Store: store.NewRevokeRepo(a.db), Roles: members, Notifier: svc, Push: pusher, Saved: seqs, InFlight: inflight})
	routes.NewSync(sync.NewCursors(access, writer, convRepo), sync.NewConversations(access, convRepo, writer, members, noPush),
		recall, a.cfg.HTTP.MaxBodyBytes, a.log).Register(a.server, a.ws)
	a.resender = sync.NewResender(sync.ResendDeps{Config: a.cfg.Sync, Reader: convRepo, Writer: writer, Redis: a.rdb,
		Keys: a.keys, MaxQueued: a.cfg.WS.HighWater / 2, Registry: a.metrics, Log: a.log, Audit: audit})

	a.buildPrivacy(access, members, puller, mediaParts.exportMedia(), mediaParts.ownerObjects())
	a.buildIntegration(hooks, members, convRepo)
	if err := a.buildPush(ctx, members, convRepo); err != nil {
		return err
	}

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

// buildObservability serves /metrics (buildOps: metrics.addr or the main
// listener) and the admin view of the switches.
func (a *App) buildObservability(ctx context.Context) error {
	if err := a.buildOps(ctx); err != nil {
		return err
	}
	a.server.Route("GET", "/admin/mode", a.adminMode, false)
	a.server.Route("GET", "/admin/cluster", a.adminCluster, false)
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
	if !a.isAdmin(c) {
		api.WriteError(ctx, c, a.log, wire.NewError(wire.ReasonForbidden, "admin endpoints need Authorization: Bearer <admin.token>"))
		return
	}
	m := a.mode.Get()
	api.WriteOK(c, ModeJSON{TwoPhaseEnabled: m.Enabled, DeliverBeforeSaved: m.DeliverBeforeSaved, FailOpen: m.FailOpen})
}

// adminAuthorized reports whether header is "Bearer <want>". The token is
// compared in constant time (subtle.ConstantTimeCompare), so its bytes
// cannot be guessed one by one from response times; an empty want (no
// admin.token configured) authorizes nobody.
func adminAuthorized(want string, header []byte) bool {
	got, ok := bytes.CutPrefix(header, []byte("Bearer "))
	return want != "" && ok && subtle.ConstantTimeCompare(got, []byte(want)) == 1
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

// consumerName is this process's stable name in every consumer group:
// streams.consumer_name when set, else the instance id (cluster.instance_id).
func (a *App) consumerName() string {
	if a.cfg.Streams.ConsumerName != "" {
		return a.cfg.Streams.ConsumerName
	}
	return a.member.Self().ID
}

// newRegistry is the process's Prometheus registry with Go and process collectors.
func newRegistry() *prometheus.Registry {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return reg
}

// acceptOptions: the run_id fence and the lost-message check on every real
// Redis (the embedded in-process one cannot fail over and has no INFO in
// scripts), and the replica wait of two_phase.accept_replicas; everywhere,
// this instance's id in every stream entry and the log.accept_perf line.
func (a *App) acceptOptions(msgs *store.MessageRepo) []streams.AcceptOption {
	opts := []streams.AcceptOption{streams.WithInstanceID(a.member.Self().ID)}
	if a.cfg.Log.AcceptPerf {
		opts = append(opts, streams.WithAcceptPerfLog(a.log))
	}
	if a.embedded {
		return append(opts, streams.WithoutFence())
	}
	return append(opts,
		streams.WithReplicas(a.cfg.TwoPhase.AcceptReplicas, a.cfg.TwoPhase.AcceptReplicasTimeout),
		streams.WithLostCheck(msgs, a.log, a.metrics, 10*time.Second),
	)
}

// learnRecordsKept lets the sends' duplicate lookup be skipped from the
// Redis servers' start rather than from this process's (see
// streams.Accepter.LearnRecordsKept); the embedded Redis starts with the
// process anyway. Failing only delays the skipping by a minute.
func (a *App) learnRecordsKept(ctx context.Context, acc *streams.Accepter) {
	if a.embedded {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if err := acc.LearnRecordsKept(ctx); err != nil {
		a.log.Warn("could not ask redis when it started; idempotency records count as whole from now", "err", err)
		return
	}
	since, _ := acc.RecordsKept()
	a.log.Debug("idempotency records count as whole", "since", since)
}

// ReleaseShards stops this instance's save and deliver stages after the
// batches in hand and gives its shard leases back at once, so the other
// instances take the shards over without waiting for the leases to expire
// (call it right after SIGTERM). Idempotent; the
// pipeline's own shutdown does the same.
func (a *App) ReleaseShards(ctx context.Context) error {
	if a.pipeline == nil {
		return nil
	}
	return a.pipeline.Release(ctx)
}

// ShardsJSON is the shard part of GET /admin/cluster: the shards this
// instance runs, and every shard's lease as Redis holds it.
type ShardsJSON struct {
	Owned  []workers.OwnedShard `json:"owned"`
	Leases []streams.ShardOwner `json:"leases"`
}

// Shards reports shard ownership for GET /admin/cluster.
func (a *App) Shards(ctx context.Context) (ShardsJSON, error) {
	out := ShardsJSON{Owned: []workers.OwnedShard{}, Leases: []streams.ShardOwner{}}
	if a.pipeline == nil {
		return out, nil
	}
	out.Owned = a.pipeline.Owned()
	if a.embedded {
		return out, nil
	}
	leases, err := a.shardLeases.Owners(ctx)
	if err != nil {
		return out, err
	}
	out.Leases = leases
	return out, nil
}

// Audit lines (docs/operations.md "Audit lines"): at most
// auditPerSecond lines a second (burst auditBurst) per level, so an outage
// that fails every push cannot flood the log.
const (
	auditPerSecond = 20
	auditBurst     = 50
)

func (a *App) newAudit() *domain.Audit {
	id := a.cfg.Cluster.InstanceID
	if a.member != nil {
		id = a.member.Self().ID
	}
	return domain.NewAudit(a.log, id, auditPerSecond, auditBurst)
}
