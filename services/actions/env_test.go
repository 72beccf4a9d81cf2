package actions_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/nexo-im/nexo/configs"
	"github.com/nexo-im/nexo/domain"
	"github.com/nexo-im/nexo/gateway/wire"
	"github.com/nexo-im/nexo/gateway/ws"
	"github.com/nexo-im/nexo/gateway/ws/wstest"
	"github.com/nexo-im/nexo/services/actions"
	"github.com/nexo-im/nexo/services/chat"
	"github.com/nexo-im/nexo/services/group"
	"github.com/nexo-im/nexo/services/sync"
	"github.com/nexo-im/nexo/store"
	"github.com/nexo-im/nexo/store/redistest"
	"github.com/nexo-im/nexo/store/storetest"
	"github.com/nexo-im/nexo/streams"
	"github.com/nexo-im/nexo/workers"
)

func TestMain(m *testing.M) { os.Exit(redistest.Main(m)) }

var (
	quiet = slog.New(slog.DiscardHandler)
	bg    = context.Background()
)

// env is the actions over the real chat and group services on a fresh
// MariaDB database and Redis prefix, pushes landing in a fake registry.
type env struct {
	t       testing.TB
	cfg     configs.Config
	db      *store.DB
	rdb     redis.UniversalClient
	keys    store.Keys
	reg     *wstest.Recorder
	msgs    *store.MessageRepo
	repo    *store.ActionRepo
	chat    *chat.Service
	puller  *chat.Puller
	members *group.Members
	groups  *group.Service
	access  *sync.Access
	cursors *sync.Cursors
	writer  *sync.CursorWriter
	recall  *sync.Recall
	svc     *actions.Service
	counts  *actions.ReadCounts
	stop    []func()
}

type envOpts struct {
	mode  configs.TwoPhase
	redis func(t testing.TB) (redis.UniversalClient, string)
	tweak func(*configs.Config)
}

var (
	syncMode  = configs.TwoPhase{Enabled: false, FailOpen: true, IdempotencyTTL: time.Hour}
	saveFirst = configs.TwoPhase{Enabled: true, FailOpen: true, IdempotencyTTL: time.Hour}
)

func newEnv(t testing.TB, o envOpts) *env {
	t.Helper()
	cfg := configs.Default()
	cfg.Group.Push.Mode = configs.GroupPushPush
	cfg.Streams.Shards = 2
	cfg.Streams.Block = 50 * time.Millisecond
	cfg.Save.BatchWait = time.Millisecond
	cfg.Sync.CursorFlushInterval = 5 * time.Millisecond
	cfg.Sync.ReadCountInterval = 50 * time.Millisecond
	if o.tweak != nil {
		o.tweak(&cfg)
	}
	if o.mode == (configs.TwoPhase{}) {
		o.mode = syncMode
	}
	if o.redis == nil {
		o.redis = func(t testing.TB) (redis.UniversalClient, string) { return storetest.Redis(t) }
	}
	db := storetest.MySQL(t)
	rdb, prefix := o.redis(t)
	skeys := streams.NewKeys(prefix, cfg.Streams.Shards)
	e := &env{t: t, cfg: cfg, db: db, rdb: rdb, keys: store.Keys{Prefix: prefix}, reg: wstest.NewRecorder(wstest.EveryoneOnline),
		msgs: store.NewMessageRepo(db), repo: store.NewActionRepo(db)}
	seqs := store.NewSeqRepo(db)
	convRepo := store.NewConversationRepo(db)
	groupRepo := store.NewGroupRepo(db)
	users := store.NewUserRepo(db)
	cache := store.NewGroupCache(rdb, e.keys, cfg.Group.MemberCacheTTL)
	e.members = group.NewMembers(groupRepo, cache, cfg.Group, nil, quiet)
	pushes := ws.NewPushes(e.reg, quiet)
	fanout := group.NewFanout(e.members, pushes, cfg.Group.Push, nil)
	pusher := chat.NewPusher(pushes)
	accepter := streams.NewAccepter(rdb, skeys, seqs, 100, time.Hour)
	noPush := sync.NewNoPushCache(convRepo, time.Hour, quiet)
	async := chat.NewAsyncFanout(4096, 2, pusher, fanout, noPush, nil, quiet)
	inflight := streams.NewInFlightReader(rdb, skeys)
	e.puller = chat.NewPuller(e.msgs, seqs, e.members, inflight)
	e.puller.UseActions(actions.NewAnnotator(e.repo, e.msgs))
	e.chat = chat.NewService(chat.Deps{Mode: chat.NewMode(o.mode), Msg: cfg.Msg, Accepter: accepter, Saver: e.msgs,
		Leaser: seqs, Users: users, Groups: e.members, Fanout: async, Originals: e.msgs, Log: quiet, Quotes: e.puller})
	e.groups = group.NewService(group.Deps{Config: cfg.Group, Groups: groupRepo, Users: users, Members: e.members,
		Locks: cache, Notifier: e.chat, Log: quiet})
	e.access = sync.NewAccess(e.members, seqs, sync.NewRedisIssued(rdb, skeys), users)
	receipts := sync.NewReceipts(pusher, convRepo, e.members, cfg.Sync.GroupReceiptMaxMembers, quiet)
	e.counts = actions.NewReadCounts(e.repo, e.members, pushes, rdb, e.keys, cfg.Sync.ReadCountInterval, quiet)
	receipts.UseReadCounts(e.counts)
	e.writer = sync.NewCursorWriter(sync.CursorWriterDeps{Store: store.NewCursorRepo(db), Sink: receipts, Window: cfg.Sync.CursorFlushInterval, Log: quiet})
	e.cursors = sync.NewCursors(e.access, e.writer, convRepo)
	e.recall = sync.NewRecall(sync.RecallDeps{Window: cfg.Msg.RevokeWindow, Wait: cfg.Sync.RevokeWait, Access: e.access,
		Store: store.NewRevokeRepo(db), Roles: e.members, Notifier: e.chat, Push: pusher, Saved: seqs, InFlight: inflight})
	e.svc = actions.NewService(actions.Deps{Msg: cfg.Msg, Wait: cfg.Sync.RevokeWait, Access: e.access, Store: e.repo,
		Messages: e.msgs, Roles: e.members, Viewers: e.members, Notifier: e.chat})

	if o.mode.Enabled {
		metrics := workers.NewMetrics(nil)
		save := workers.NewSaveHandler(workers.SaveDeps{Keys: skeys, Redis: rdb, Messages: e.msgs, Seqs: seqs,
			Allocator: accepter, Pusher: pusher, Metrics: metrics, Log: quiet, BatchWait: cfg.Save.BatchWait, BatchSize: cfg.Save.BatchSize})
		deliver := workers.NewDeliverHandler(workers.DeliverDeps{Keys: skeys, Redis: rdb, Pusher: pusher, Groups: fanout,
			Filter: noPush, Metrics: metrics, Log: quiet})
		pipeline := workers.NewPipeline(rdb, skeys, cfg.Streams, cfg.Save, "n1", save, deliver, quiet)
		if err := pipeline.EnsureGroups(bg); err != nil {
			t.Fatal(err)
		}
		e.run(func(ctx context.Context) { _ = pipeline.Run(ctx) })
	}
	e.run(func(ctx context.Context) { _ = async.Run(ctx) })
	e.run(func(ctx context.Context) { _ = e.writer.Run(ctx) })
	t.Cleanup(func() {
		for i := len(e.stop) - 1; i >= 0; i-- {
			e.stop[i]()
		}
	})
	return e
}

func (e *env) run(fn func(ctx context.Context)) {
	ctx, cancel := context.WithCancel(bg)
	done := make(chan struct{})
	go func() { fn(ctx); close(done) }()
	e.stop = append(e.stop, func() { cancel(); <-done })
}

func (e *env) addUsers(ids ...string) { storetest.AddUsers(e.t, e.db, ids...) }

var clientIDs atomic.Int64

// sendReq sends req from sender and returns its ACK.
func (e *env) sendReq(sender string, req chat.SendRequest) (chat.AckJSON, error) {
	req.ClientMsgID = fmt.Sprint("c", clientIDs.Add(1))
	if req.MsgType == 0 {
		req.MsgType = int(domain.MsgText)
	}
	return e.chat.Send(bg, chat.Origin{UserID: sender}, req)
}

// send sends text from sender to recv (single chat) and returns its seq,
// once saved.
func (e *env) send(sender, recv, text string) int64 {
	e.t.Helper()
	ack, err := e.sendReq(sender, chat.SendRequest{SessionType: int(domain.SessionSingle), RecvID: recv, Content: chat.ContentJSON{Text: text}})
	if err != nil {
		e.t.Fatalf("send %s -> %s: %v", sender, recv, err)
	}
	e.waitSaved(ack.ConversationID, ack.Seq)
	return ack.Seq
}

// sendGroup sends text to a group and returns its seq, once saved.
func (e *env) sendGroup(sender, groupID, text string) int64 {
	e.t.Helper()
	ack, err := e.sendReq(sender, chat.SendRequest{SessionType: int(domain.SessionGroup), GroupID: groupID, Content: chat.ContentJSON{Text: text}})
	if err != nil {
		e.t.Fatalf("send %s -> %s: %v", sender, groupID, err)
	}
	e.waitSaved(ack.ConversationID, ack.Seq)
	return ack.Seq
}

func (e *env) createGroup(owner string, members ...string) string {
	e.t.Helper()
	g, err := e.groups.Create(bg, owner, group.CreateRequest{Name: "team", MemberIDs: members, JoinPolicy: group.PolicyOpen})
	if err != nil {
		e.t.Fatalf("create group: %v", err)
	}
	return g.GroupID
}

// waitSaved polls until the message at (conv, seq) is in the database.
func (e *env) waitSaved(conv string, seq int64) {
	e.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for {
		got, err := e.msgs.BySeqs(bg, conv, []int64{seq})
		if err == nil && len(got) == 1 {
			return
		}
		if time.Now().After(deadline) {
			e.t.Fatalf("%s seq %d not saved (%v)", conv, seq, err)
		}
		<-tick.C
	}
}

// pullOne pulls (conv, seq) as user.
func (e *env) pullOne(user, conv string, seq int64) chat.MessageJSON {
	e.t.Helper()
	res, err := e.puller.PullBySeqs(bg, user, conv, []int64{seq})
	if err != nil || len(res.Messages) != 1 {
		e.t.Fatalf("pull %s seq %d as %s: %v %+v", conv, seq, user, err, res)
	}
	return res.Messages[0]
}

// wantReason fails unless err maps to reason on the wire.
func wantReason(t testing.TB, err error, reason wire.Reason) {
	t.Helper()
	if err == nil {
		t.Fatalf("no error, want %s", reason)
	}
	if got := wire.FromError(err).Reason; got != reason {
		t.Fatalf("error %v is %s on the wire, want %s", err, got, reason)
	}
}

// chatPull is a range pull of [begin, end].
func chatPull(conv string, begin, end int64) chat.PullRequest {
	return chat.PullRequest{ConversationID: conv, BeginSeq: begin, EndSeq: end}
}
