package workers_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/nexo-im/nexo/configs"
	"github.com/nexo-im/nexo/domain"
	"github.com/nexo-im/nexo/store"
	"github.com/nexo-im/nexo/store/storetest"
	"github.com/nexo-im/nexo/streams"
	"github.com/nexo-im/nexo/workers"
)

// recorder is a Pusher that records every push.
type recorder struct {
	mu      sync.Mutex
	saved   map[string]domain.Ack // client_msg_id -> ACK(saved)
	savedN  int
	pushes  map[string][]int64 // user -> seqs pushed
	failed  []string           // client_msg_ids of save_failed pushes
	changed chan struct{}
}

func newRecorder() *recorder {
	return &recorder{saved: map[string]domain.Ack{}, pushes: map[string][]int64{}, changed: make(chan struct{}, 1)}
}

func (r *recorder) poke() {
	select {
	case r.changed <- struct{}{}:
	default:
	}
}

func (r *recorder) PushMessage(_ context.Context, m *domain.Message, userIDs []string, _ string) {
	r.mu.Lock()
	for _, u := range userIDs {
		r.pushes[u] = append(r.pushes[u], m.Seq)
	}
	r.mu.Unlock()
	r.poke()
}

func (r *recorder) PushAck(_ context.Context, _ string, a domain.Ack) {
	r.mu.Lock()
	r.saved[a.ClientMsgID] = a
	r.savedN++
	r.mu.Unlock()
	r.poke()
}

func (r *recorder) PushSaveFailed(_ context.Context, m *domain.Message) {
	r.mu.Lock()
	r.failed = append(r.failed, m.ClientMsgID)
	r.mu.Unlock()
	r.poke()
}

// waitFor polls cond until it holds or the deadline passes.
func (r *recorder) waitFor(t *testing.T, what string, d time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.NewTimer(d)
	defer deadline.Stop()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		r.mu.Lock()
		ok := cond()
		r.mu.Unlock()
		if ok {
			return
		}
		select {
		case <-r.changed:
		case <-tick.C:
		case <-deadline.C:
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}

type env struct {
	t      testing.TB
	rdb    redis.UniversalClient
	keys   streams.Keys
	db     *store.DB
	msgs   *store.MessageRepo
	seqs   *store.SeqRepo
	acc    *streams.Accepter
	rec    *recorder
	cfg    configs.Config
	log    *slog.Logger
	shards int
	// offenders, when set, is the save stage's DeadSenders.
	offenders workers.DeadSenders
	// groups, when set, is the deliver stage's GroupFanout.
	groups workers.GroupFanout
	// accepts, when set, is the save stage's SavedAccepts.
	accepts workers.SavedAccepts
	// metrics are those of the pipeline start ran last.
	metrics *workers.Metrics
}

func newEnv(t *testing.T, db *store.DB) *env { return newEnvShards(t, db, 2) }

func newEnvShards(t *testing.T, db *store.DB, shards int) *env {
	rdb, prefix := storetest.Redis(t)
	return newEnvOnShards(t, db, rdb, prefix, shards)
}

// newEnvOn is newEnv on a given Redis (a topology of storetest.RedisTopologies).
func newEnvOn(t testing.TB, db *store.DB, rdb redis.UniversalClient, prefix string, opts ...streams.AcceptOption) *env {
	return newEnvOnShards(t, db, rdb, prefix, 2, opts...)
}

func newEnvOnShards(t testing.TB, db *store.DB, rdb redis.UniversalClient, prefix string, shards int, opts ...streams.AcceptOption) *env {
	if db == nil {
		db = storetest.MySQL(t)
	}
	cfg := configs.Default()
	cfg.Streams.Shards = shards
	cfg.Streams.Block = 100 * time.Millisecond
	cfg.Streams.ClaimMinIdle = 300 * time.Millisecond
	cfg.Streams.TrimInterval = 100 * time.Millisecond
	cfg.Save.RetryBackoff = 20 * time.Millisecond
	cfg.Save.RetryBackoffMax = 200 * time.Millisecond
	keys := streams.NewKeys(prefix, cfg.Streams.Shards)
	seqs := store.NewSeqRepo(db)
	return &env{
		t: t, rdb: rdb, keys: keys, db: db, msgs: store.NewMessageRepo(db), seqs: seqs,
		acc: streams.NewAccepter(rdb, keys, seqs, 100, time.Hour, opts...), rec: newRecorder(), cfg: cfg,
		log: slog.New(slog.NewTextHandler(io.Discard, nil)), shards: cfg.Streams.Shards,
	}
}

// start runs a pipeline under consumer name until the returned stop is called.
func (e *env) start(name string) (stop func()) {
	m := workers.NewMetrics(nil)
	deliver := workers.NewDeliverHandler(workers.DeliverDeps{Keys: e.keys, Redis: e.rdb, Pusher: e.rec, Groups: e.groups, Metrics: m, Log: e.log})
	save := workers.NewSaveHandler(workers.SaveDeps{Keys: e.keys, Redis: e.rdb, Messages: e.msgs, Seqs: e.seqs,
		Allocator: e.acc, Accepts: e.accepts, Pusher: e.rec, Metrics: m, Log: e.log, DeadSenders: e.offenders, Deliver: deliver})
	e.metrics = m
	p := workers.NewPipeline(e.rdb, e.keys, e.cfg.Streams, e.cfg.Save, name, save, deliver, e.log)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- p.Run(ctx) }()
	return func() {
		cancel()
		if err := <-done; err != nil {
			e.t.Errorf("pipeline: %v", err)
		}
	}
}

func (e *env) send(sender, recv, clientID string, route streams.Route) streams.Accepted {
	e.t.Helper()
	m := domain.Message{
		ServerMsgID: "srv-" + sender + "-" + clientID, ClientMsgID: clientID,
		ConversationID: domain.SingleConversationID(sender, recv), SenderID: sender, RecvID: recv,
		SessionType: domain.SessionSingle, MsgType: domain.MsgText, Content: domain.Content{Text: "hello " + clientID},
		SendAt: time.Now().UnixMilli(),
	}
	a, err := e.acc.Accept(context.Background(), streams.AcceptRequest{Msg: m, Route: route, Append: true})
	if err != nil {
		e.t.Fatal(err)
	}
	return a
}

// savedRows counts stored messages of a conversation.
func (e *env) savedRows(conv string) int {
	var n int64
	e.db.Gorm.Table("messages").Where("conversation_id = ?", conv).Count(&n)
	return int(n)
}

func (e *env) pendingTotal() int64 {
	var n int64
	for s := 0; s < e.shards; s++ {
		for _, st := range []struct{ k, g string }{{e.keys.ToSave(s), streams.GroupSave}, {e.keys.ToDeliver(s), streams.GroupDeliver}} {
			if p, err := e.rdb.XPending(context.Background(), st.k, st.g).Result(); err == nil {
				n += p.Count
			}
		}
	}
	return n
}

// topoEnv runs f once per Redis topology (standalone, cluster, sentinel).
func topoEnv(t *testing.T, f func(t *testing.T, e *env)) {
	for name, open := range storetest.RedisTopologies() {
		t.Run(name, func(t *testing.T) {
			rdb, keys := open(t)
			f(t, newEnvOn(t, nil, rdb, keys.Prefix))
		})
	}
}

func TestPipelineSavesDeliversAndAcksBothRoutes(t *testing.T) {
	topoEnv(t, testSavesDeliversAndAcksBothRoutes)
}

func testSavesDeliversAndAcksBothRoutes(t *testing.T, e0 *env) {
	for _, route := range []streams.Route{streams.SaveFirst, streams.DeliverFirst} {
		t.Run(string(route), func(t *testing.T) {
			e := newEnvOn(t, nil, e0.rdb, storetest.RandomName("r"))
			stop := e.start("n1")
			const n = 40
			for i := 0; i < n; i++ {
				e.send("alice", "bob", fmt.Sprint("m", i), route)
			}
			e.rec.waitFor(t, "ACK(saved) and pushes for every message", 10*time.Second, func() bool {
				return len(e.rec.saved) == n && len(e.rec.pushes["bob"]) >= n
			})
			stop()
			conv := domain.SingleConversationID("alice", "bob")
			if got := e.savedRows(conv); got != n {
				t.Fatalf("%d rows saved, want %d", got, n)
			}
			e.rec.mu.Lock()
			defer e.rec.mu.Unlock()
			for i := 0; i < n; i++ {
				a := e.rec.saved[fmt.Sprint("m", i)]
				if a.Type != domain.AckSaved || a.Seq != int64(i+1) || a.ConversationID != conv {
					t.Errorf("ACK(saved) of m%d = %+v", i, a)
				}
			}
			// Per conversation, pushes leave in seq order.
			for i, s := range e.rec.pushes["bob"][:n] {
				if s != int64(i+1) {
					t.Fatalf("bob's pushes out of order: %v", e.rec.pushes["bob"])
				}
			}
			if p := e.pendingTotal(); p != 0 {
				t.Errorf("%d entries left pending after a graceful stop", p)
			}
		})
	}
}

func TestCrashedConsumerEntriesAreReclaimedAndSavedOnce(t *testing.T) {
	topoEnv(t, testCrashedConsumerEntriesAreReclaimedAndSavedOnce)
}

func testCrashedConsumerEntriesAreReclaimedAndSavedOnce(t *testing.T, e *env) {
	ctx := context.Background()
	const n = 30
	for i := 0; i < n; i++ {
		e.send("carol", "dave", fmt.Sprint("m", i), streams.SaveFirst)
	}
	// A consumer reads every entry and dies before acking.
	for s := 0; s < e.shards; s++ {
		if err := streams.EnsureGroup(ctx, e.rdb, e.keys.ToSave(s), streams.GroupSave); err != nil {
			t.Fatal(err)
		}
		e.rdb.XReadGroup(ctx, &redis.XReadGroupArgs{Group: streams.GroupSave, Consumer: "crashed",
			Streams: []string{e.keys.ToSave(s), ">"}, Count: 1000, Block: -1})
	}
	if p := e.pendingTotal(); p != n {
		t.Fatalf("%d pending before recovery, want %d", p, n)
	}
	began := time.Now()
	stop := e.start("survivor")
	e.rec.waitFor(t, "reclaimed entries saved", 10*time.Second, func() bool { return len(e.rec.saved) == n })
	took := time.Since(began)
	stop()
	if got := e.savedRows(domain.SingleConversationID("carol", "dave")); got != n {
		t.Fatalf("%d rows, want %d", got, n)
	}
	if e.rec.savedN != n {
		t.Errorf("%d ACK(saved) pushes for %d messages: something was saved twice", e.rec.savedN, n)
	}
	// How fast is a figure, not a pass/fail rule (the wait above bounds
	// it); on a loaded machine it runs seconds past claim_min_idle.
	t.Logf("recovery took %v (claim_min_idle %v)", took, e.cfg.Streams.ClaimMinIdle)
}

func TestStoppedSaveStageCatchesUpExactlyOnce(t *testing.T) {
	topoEnv(t, testStoppedSaveStageCatchesUpExactlyOnce)
}

func testStoppedSaveStageCatchesUpExactlyOnce(t *testing.T, e *env) {
	stop := e.start("n1")
	for i := 0; i < 20; i++ {
		e.send("erin", "frank", fmt.Sprint("a", i), streams.SaveFirst)
	}
	stop() // stages down while sends keep being accepted
	for i := 0; i < 20; i++ {
		e.send("erin", "frank", fmt.Sprint("b", i), streams.SaveFirst)
	}
	stop = e.start("n1")
	e.rec.waitFor(t, "all 40 saved", 10*time.Second, func() bool { return len(e.rec.saved) == 40 })
	stop()
	if got := e.savedRows(domain.SingleConversationID("erin", "frank")); got != 40 {
		t.Fatalf("%d rows, want 40", got)
	}
}

func TestDatabaseOutageBacksOffAndDrains(t *testing.T) {
	db, proxy := storetest.MySQLBehindProxy(t)
	e := newEnv(t, db)
	e.send("gina", "hank", "m0", streams.SaveFirst) // leases a block of seqs while the database is up
	proxy.Down()
	stop := e.start("n1")
	for i := 1; i < 25; i++ {
		e.send("gina", "hank", fmt.Sprint("m", i), streams.SaveFirst)
	}
	// The save stage takes entries and holds them pending, unacknowledged,
	// retrying with backoff.
	e.rec.waitFor(t, "the save stage to hold entries", 10*time.Second, func() bool { return e.pendingTotal() > 0 })
	e.rec.mu.Lock()
	early := len(e.rec.saved)
	e.rec.mu.Unlock()
	if early != 0 {
		t.Fatalf("%d ACK(saved) while the database was down", early)
	}
	proxy.Up()
	e.rec.waitFor(t, "backlog drained after the database returned", 20*time.Second, func() bool { return len(e.rec.saved) == 25 })
	stop()
	if got := e.savedRows(domain.SingleConversationID("gina", "hank")); got != 25 {
		t.Fatalf("%d rows, want 25", got)
	}
}

func TestPoisonEntryIsDeadLetteredWithoutBlockingItsShard(t *testing.T) {
	e := newEnv(t, nil)
	e.cfg.Save.MaxAttempts = 2
	e.cfg.Streams.ClaimMinIdle = 150 * time.Millisecond
	ctx := context.Background()
	conv := domain.SingleConversationID("ivan", "judy")
	e.send("ivan", "judy", "ok1", streams.SaveFirst)
	// Invalid JSON in content_custom fails the JSON column check: a data
	// error no retry can fix.
	bad := domain.Message{ServerMsgID: "srv-bad", ClientMsgID: "bad", ConversationID: conv, SenderID: "ivan", RecvID: "judy",
		SessionType: domain.SessionSingle, MsgType: domain.MsgCustom, Content: domain.Content{Custom: "{not json"}, SendAt: 1}
	if _, err := e.acc.Accept(ctx, streams.AcceptRequest{Msg: bad, Route: streams.SaveFirst, Append: true}); err != nil {
		t.Fatal(err)
	}
	e.send("ivan", "judy", "ok2", streams.SaveFirst)
	told := &savedAccepts{}
	e.accepts = told
	stop := e.start("n1")
	e.rec.waitFor(t, "the good messages saved and the bad one reported", 15*time.Second, func() bool {
		return len(e.rec.saved) == 2 && len(e.rec.failed) == 1
	})
	stop()
	if e.rec.failed[0] != "bad" {
		t.Errorf("save_failed for %q", e.rec.failed[0])
	}
	// The accepter hears of the saved messages, on their shard, and never
	// of the one that failed.
	told.mu.Lock()
	if want := []string{"srv-ivan-ok1", "srv-ivan-ok2"}; !slices.Equal(told.ids, want) || told.shard != e.keys.Shard(conv) {
		t.Errorf("the accepter heard of %v on shard %d, want %v on %d", told.ids, told.shard, want, e.keys.Shard(conv))
	}
	told.mu.Unlock()
	shard := e.keys.Shard(conv)
	dead := e.rdb.XRange(ctx, e.keys.Dead(shard), "-", "+").Val()
	if len(dead) != 1 || dead[0].Values["err"] == "" {
		t.Fatalf("dead-letter stream = %+v", dead)
	}
	rows, _ := e.msgs.BySeqs(ctx, conv, []int64{2})
	if len(rows) != 1 || rows[0].Status != domain.StatusFailed {
		t.Fatalf("seq 2 placeholder = %+v", rows)
	}
	if p := e.pendingTotal(); p != 0 {
		t.Errorf("%d pending", p)
	}
}

// TestRepeatOffenderIsBlocked: a sender whose messages keep
// being dead-lettered (content the database refuses) is blocked after
// limits.dead_letters.count of them, as every instance sees; the server's
// own notices and other senders are not counted.
func TestRepeatOffenderIsBlocked(t *testing.T) {
	e := newEnv(t, nil)
	e.cfg.Save.MaxAttempts = 2
	e.cfg.Streams.ClaimMinIdle = 150 * time.Millisecond
	cfg := configs.DeadLetters{Count: 2, Window: time.Hour, Block: time.Minute}
	keys := store.Keys{Prefix: storetest.RandomName("off")}
	offenders := store.NewDeadSenders(e.rdb, keys, cfg, nil)
	e.offenders = offenders
	t.Cleanup(func() { storetest.DeletePrefix(e.rdb, "rate:"+keys.Prefix); storetest.DeletePrefix(e.rdb, keys.Prefix) })
	ctx := context.Background()
	poison := func(sender, clientID string) {
		t.Helper()
		conv := domain.SingleConversationID(sender, "judy")
		m := domain.Message{ServerMsgID: "srv-" + clientID, ClientMsgID: clientID, ConversationID: conv, SenderID: sender, RecvID: "judy",
			SessionType: domain.SessionSingle, MsgType: domain.MsgCustom, Content: domain.Content{Custom: "{not json"}, SendAt: 1}
		if _, err := e.acc.Accept(ctx, streams.AcceptRequest{Msg: m, Route: streams.SaveFirst, Append: true}); err != nil {
			t.Fatal(err)
		}
	}
	poison("olga", "bad1")
	poison("pete", "bad2")                                  // one dead letter: under the count
	poison("sam", domain.SystemClientMsgIDPrefix+"notice1") // the server's own
	poison("sam", domain.SystemClientMsgIDPrefix+"notice2") // never counted
	poison("olga", "bad3")
	e.send("olga", "judy", "ok", streams.SaveFirst)
	stop := e.start("n1")
	e.rec.waitFor(t, "four dead letters and the good message saved", 15*time.Second, func() bool {
		return len(e.rec.failed) == 5 && len(e.rec.saved) == 1
	})
	stop()
	other := store.NewDeadSenders(e.rdb, keys, cfg, nil) // another instance
	if err := other.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	if w := other.Blocked("olga"); w <= 0 || w > cfg.Block {
		t.Fatalf("olga blocked for %v, want up to %v", w, cfg.Block)
	}
	if other.Blocked("pete") != 0 || other.Blocked("sam") != 0 {
		t.Fatal("pete (one dead letter) and sam (server notices) must not be blocked")
	}
}

// TestPipelineStoppedBeforeItStartsIsClean: a process stopped while still
// starting returns no error and leaves nothing pending.
func TestPipelineStoppedBeforeItStartsIsClean(t *testing.T) {
	e := newEnv(t, nil)
	m := workers.NewMetrics(nil)
	save := workers.NewSaveHandler(workers.SaveDeps{Keys: e.keys, Redis: e.rdb, Messages: e.msgs, Seqs: e.seqs,
		Allocator: e.acc, Pusher: e.rec, Metrics: m, Log: e.log})
	deliver := workers.NewDeliverHandler(workers.DeliverDeps{Keys: e.keys, Redis: e.rdb, Pusher: e.rec, Metrics: m, Log: e.log})
	p := workers.NewPipeline(e.rdb, e.keys, e.cfg.Streams, e.cfg.Save, "n1", save, deliver, e.log)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := p.Run(ctx); err != nil {
		t.Fatalf("Run on a cancelled context: %v", err)
	}
}

// TestMessageRecalledBeforeItsSaveIsNeverPushed: a recall recorded while the
// message was still in its stream revokes it at the save, and the save-first
// route then pushes nothing of it.
func TestMessageRecalledBeforeItsSaveIsNeverPushed(t *testing.T) {
	e := newEnv(t, nil)
	ctx := context.Background()
	a := e.send("lena", "mo", "secret", streams.SaveFirst)
	conv := domain.SingleConversationID("lena", "mo")
	if err := store.NewRevokeRepo(e.db).Record(ctx, store.RevokeIntent{ConversationID: conv, Seq: a.Seq,
		RevokerID: "lena", MinSendAt: 0}); err != nil {
		t.Fatal(err)
	}
	e.send("lena", "mo", "after", streams.SaveFirst)
	stop := e.start("n1")
	e.rec.waitFor(t, "both saved and the later one pushed", 10*time.Second, func() bool {
		return len(e.rec.saved) == 2 && len(e.rec.pushes["mo"]) >= 1
	})
	stop()
	if got := e.rec.pushes["mo"]; len(got) != 1 || got[0] != a.Seq+1 {
		t.Fatalf("pushes to mo = %v, want only seq %d", got, a.Seq+1)
	}
	rows, _ := e.msgs.BySeqs(ctx, conv, []int64{a.Seq})
	if len(rows) != 1 || rows[0].Status != domain.StatusRevoked {
		t.Fatalf("stored = %+v, want revoked", rows)
	}
}

// savedAccepts records what the save stage reports saved.
type savedAccepts struct {
	mu    sync.Mutex
	shard int
	ids   []string
}

func (s *savedAccepts) Saved(shard int, ids []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.shard, s.ids = shard, append(s.ids, ids...)
}
