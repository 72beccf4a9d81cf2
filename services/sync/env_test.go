package sync_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	gosync "sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/nexo-im/nexo/configs"
	"github.com/nexo-im/nexo/domain"
	"github.com/nexo-im/nexo/gateway/wire"
	"github.com/nexo-im/nexo/gateway/ws"
	"github.com/nexo-im/nexo/gateway/ws/wstest"
	"github.com/nexo-im/nexo/services/chat"
	"github.com/nexo-im/nexo/services/group"
	"github.com/nexo-im/nexo/services/sync"
	"github.com/nexo-im/nexo/store"
	"github.com/nexo-im/nexo/store/storetest"
	"github.com/nexo-im/nexo/streams"
	"github.com/nexo-im/nexo/workers"
)

var (
	quiet = slog.New(slog.DiscardHandler)
	bg    = context.Background()
)

// env is the sync services over the real pipeline on a fresh MariaDB
// database and Redis prefix, with pushes landing in a fake registry.
type env struct {
	t        testing.TB
	cfg      configs.Config
	db       *store.DB
	rdb      *redis.Client
	keys     store.Keys
	skeys    streams.Keys
	reg      *wstest.Recorder
	seqs     *store.SeqRepo
	msgs     *store.MessageRepo
	convRepo *store.ConversationRepo
	cursRepo *store.CursorRepo
	accepter *streams.Accepter
	chat     *chat.Service
	puller   *chat.Puller
	members  *group.Members
	groups   *group.Service
	access   *sync.Access
	writer   *sync.CursorWriter
	cursors  *sync.Cursors
	convs    *sync.Conversations
	recall   *sync.Recall
	resender *sync.Resender
	pipeline *workers.Pipeline
	async    *chat.AsyncFanout
	noPush   *sync.NoPushCache
	stop     []func()
}

// envOpts tweak an env: the pipeline mode and configuration, and whether
// the save and deliver stages start at once.
type envOpts struct {
	mode     configs.TwoPhase
	tweak    func(*configs.Config)
	noStages bool
}

var (
	syncMode     = configs.TwoPhase{Enabled: false, FailOpen: true, IdempotencyTTL: time.Hour}
	saveFirst    = configs.TwoPhase{Enabled: true, FailOpen: true, IdempotencyTTL: time.Hour}
	deliverFirst = configs.TwoPhase{Enabled: true, DeliverBeforeSaved: true, FailOpen: true, IdempotencyTTL: time.Hour}
)

func newEnv(t testing.TB, o envOpts) *env {
	t.Helper()
	cfg := configs.Default()
	cfg.Group.Push.Mode = configs.GroupPushPush
	cfg.Streams.Shards = 2
	cfg.Streams.Block = 50 * time.Millisecond
	cfg.Save.BatchWait = time.Millisecond
	cfg.Sync.CursorFlushInterval = 5 * time.Millisecond
	cfg.Sync.ResendLockTTL = 0
	if o.tweak != nil {
		o.tweak(&cfg)
	}
	if o.mode == (configs.TwoPhase{}) {
		o.mode = syncMode
	}
	db := storetest.MySQL(t)
	rdb, prefix := storetest.Redis(t)
	e := &env{t: t, cfg: cfg, db: db, rdb: rdb, keys: store.Keys{Prefix: prefix}, skeys: streams.NewKeys(prefix, cfg.Streams.Shards),
		reg: wstest.NewRecorder(wstest.EveryoneOnline), seqs: store.NewSeqRepo(db), msgs: store.NewMessageRepo(db),
		convRepo: store.NewConversationRepo(db), cursRepo: store.NewCursorRepo(db)}
	groupRepo := store.NewGroupRepo(db)
	users := store.NewUserRepo(db)
	cache := store.NewGroupCache(rdb, e.keys, cfg.Group.MemberCacheTTL)
	e.members = group.NewMembers(groupRepo, cache, cfg.Group, nil, quiet)
	fanout := group.NewFanout(e.members, ws.NewPushes(e.reg, quiet), cfg.Group.Push, nil)
	pusher := chat.NewPusher(ws.NewPushes(e.reg, quiet))
	e.accepter = streams.NewAccepter(rdb, e.skeys, e.seqs, 100, time.Hour)
	// A TTL far beyond any test: a setting reaches the pushes through the
	// invalidation in Conversations.Update, not through expiry.
	e.noPush = sync.NewNoPushCache(e.convRepo, time.Hour, quiet)
	e.async = chat.NewAsyncFanout(4096, 2, pusher, fanout, e.noPush, nil, quiet)
	e.chat = chat.NewService(chat.Deps{Mode: chat.NewMode(o.mode), Msg: cfg.Msg,
		Accepter: e.accepter, Saver: e.msgs, Leaser: e.seqs,
		Users: users, Groups: e.members, Fanout: e.async, Originals: e.msgs, Log: quiet})
	e.puller = chat.NewPuller(e.msgs, e.seqs, e.members, streams.NewInFlightReader(rdb, e.skeys))
	e.groups = group.NewService(group.Deps{Config: cfg.Group, Groups: groupRepo, Users: users, Members: e.members,
		Locks: cache, Notifier: e.chat, Log: quiet})

	e.access = sync.NewAccess(e.members, e.seqs, sync.NewRedisIssued(rdb, e.skeys), users)
	receipts := sync.NewReceipts(pusher, e.convRepo, e.members, cfg.Sync.GroupReceiptMaxMembers, quiet)
	e.writer = sync.NewCursorWriter(sync.CursorWriterDeps{Store: e.cursRepo, Sink: receipts, Window: cfg.Sync.CursorFlushInterval, Log: quiet})
	e.cursors = sync.NewCursors(e.access, e.writer, e.convRepo)
	e.convs = sync.NewConversations(e.access, e.convRepo, e.writer, e.members, e.noPush)
	e.recall = sync.NewRecall(sync.RecallDeps{Window: cfg.Msg.RevokeWindow, Wait: cfg.Sync.RevokeWait, Access: e.access,
		Store: store.NewRevokeRepo(db), Roles: e.members, Notifier: e.chat, Push: pusher, Saved: e.seqs, InFlight: streams.NewInFlightReader(rdb, e.skeys)})
	e.resender = sync.NewResender(sync.ResendDeps{Config: cfg.Sync, Reader: e.convRepo, Writer: e.writer,
		Redis: rdb, Keys: e.keys, MaxQueued: cfg.WS.HighWater / 2, Log: quiet})

	metrics := workers.NewMetrics(nil)
	save := workers.NewSaveHandler(workers.SaveDeps{Keys: e.skeys, Redis: rdb, Messages: e.msgs, Seqs: e.seqs,
		Allocator: e.accepter, Pusher: pusher, Metrics: metrics, Log: quiet,
		BatchWait: cfg.Save.BatchWait, BatchSize: cfg.Save.BatchSize})
	deliver := workers.NewDeliverHandler(workers.DeliverDeps{Keys: e.skeys, Redis: rdb, Pusher: pusher, Groups: fanout,
		Filter: e.noPush, Metrics: metrics, Log: quiet})
	e.pipeline = workers.NewPipeline(rdb, e.skeys, cfg.Streams, cfg.Save, "n1", save, deliver, quiet)
	if err := e.pipeline.EnsureGroups(bg); err != nil {
		t.Fatal(err)
	}
	e.run(func(ctx context.Context) { _ = e.async.Run(ctx) })
	e.run(func(ctx context.Context) { _ = e.writer.Run(ctx) })
	if !o.noStages {
		e.startStages()
	}
	t.Cleanup(func() {
		for i := len(e.stop) - 1; i >= 0; i-- {
			e.stop[i]()
		}
	})
	return e
}

// run runs fn until the test ends.
func (e *env) run(fn func(ctx context.Context)) {
	ctx, cancel := context.WithCancel(bg)
	done := make(chan struct{})
	go func() { fn(ctx); close(done) }()
	e.stop = append(e.stop, func() { cancel(); <-done })
}

// startStages starts the save and deliver stages.
func (e *env) startStages() { e.run(func(ctx context.Context) { _ = e.pipeline.Run(ctx) }) }

// addUsers registers users.
func (e *env) addUsers(ids ...string) {
	e.t.Helper()
	storetest.AddUsers(e.t, e.db, ids...)
}

var clientIDs atomic.Int64

// send sends a text message from sender to recv (single chat) and returns
// its seq.
func (e *env) send(sender, recv string, at ...string) int64 {
	e.t.Helper()
	ack, err := e.chat.Send(bg, chat.Origin{UserID: sender}, chat.SendRequest{ClientMsgID: fmt.Sprint("c", clientIDs.Add(1)),
		SessionType: int(domain.SessionSingle), RecvID: recv, MsgType: int(domain.MsgText),
		Content: chat.ContentJSON{Text: "hello"}, AtUserIDs: at})
	if err != nil {
		e.t.Fatalf("send %s -> %s: %v", sender, recv, err)
	}
	return ack.Seq
}

// sendGroup sends a text message to a group and returns its seq.
func (e *env) sendGroup(sender, groupID string, at ...string) (int64, error) {
	ack, err := e.chat.Send(bg, chat.Origin{UserID: sender}, chat.SendRequest{ClientMsgID: fmt.Sprint("g", clientIDs.Add(1)),
		SessionType: int(domain.SessionGroup), GroupID: groupID, MsgType: int(domain.MsgText),
		Content: chat.ContentJSON{Text: "hi all"}, AtUserIDs: at})
	return ack.Seq, err
}

// createGroup creates a group of owner and members; it returns its ID.
func (e *env) createGroup(owner string, members ...string) string {
	e.t.Helper()
	g, err := e.groups.Create(bg, owner, group.CreateRequest{Name: "team", MemberIDs: members, JoinPolicy: group.PolicyOpen})
	if err != nil {
		e.t.Fatalf("create group: %v", err)
	}
	return g.GroupID
}

// waitSaved waits until conv's saved max seq reaches seq (polling the
// database with a deadline).
func (e *env) waitSaved(conv string, seq int64) {
	e.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for {
		got, err := e.seqs.MaxSeq(bg, conv)
		if err == nil && got >= seq {
			return
		}
		if time.Now().After(deadline) {
			e.t.Fatalf("%s: saved max seq %d, want %d (%v)", conv, got, seq, err)
		}
		<-tick.C
	}
}

// flush writes every pending cursor advance now.
func (e *env) flush() {
	e.t.Helper()
	if err := e.writer.Flush(bg); err != nil {
		e.t.Fatal(err)
	}
}

// cursor returns a stored cursor.
func (e *env) cursor(user, conv string) domain.Cursor {
	e.t.Helper()
	c, err := e.cursRepo.Get(bg, user, conv)
	if err != nil {
		e.t.Fatal(err)
	}
	return c
}

// ack sends a client ACK.
func (e *env) ack(user, conv, ackType string, seq int64) error {
	_, err := e.cursors.Ack(bg, user, sync.AckSource{}, sync.AckRequest{AckType: ackType, ConversationID: conv, Seq: seq})
	return err
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

// target is a fake connection for resends.
type target struct {
	user     string
	platform int
	mu       gosync.Mutex
	frames   []wstest.Push
	closed   bool
}

func (c *target) UserID() string  { return c.user }
func (c *target) ConnID() string  { return "conn-" + c.user }
func (c *target) PlatformID() int { return c.platform }
func (c *target) Send(p domain.Push) bool {
	f, err := ws.EncodePush(p)
	if err != nil {
		panic(err)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return false
	}
	got, err := wstest.Decode(f)
	if err != nil {
		panic(err)
	}
	c.frames = append(c.frames, got)
	return true
}

func (c *target) got() []wstest.Push {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]wstest.Push(nil), c.frames...)
}

// pacedTarget reports a queue that a writer drains: Pending is how many
// frames it holds; drain takes them.
type pacedTarget struct {
	target
	queued  atomic.Int64
	highest atomic.Int64
}

func (c *pacedTarget) Send(p domain.Push) bool {
	n := c.queued.Add(1)
	for {
		h := c.highest.Load()
		if n <= h || c.highest.CompareAndSwap(h, n) {
			break
		}
	}
	return c.target.Send(p)
}

func (c *pacedTarget) Pending() int { return int(c.queued.Load()) }

var errStop = errors.New("stop")
