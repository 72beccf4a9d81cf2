package group_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/nexo-im/nexo/configs"
	"github.com/nexo-im/nexo/domain"
	"github.com/nexo-im/nexo/gateway/wire"
	"github.com/nexo-im/nexo/gateway/ws"
	"github.com/nexo-im/nexo/services/chat"
	"github.com/nexo-im/nexo/services/group"
	"github.com/nexo-im/nexo/store"
	"github.com/nexo-im/nexo/store/storetest"
)

var quiet = slog.New(slog.DiscardHandler)

// seqNotifier stands in for chat.Service.SendSystem in rule tests: it
// allocates seqs per conversation from a counter (as the real allocator
// does, strictly increasing) and records every notification.
type seqNotifier struct {
	mu   sync.Mutex
	seqs map[string]int64
	sent []domain.Message
	fail error // returned (and nothing allocated) when set
}

func newSeqNotifier() *seqNotifier { return &seqNotifier{seqs: map[string]int64{}} }

func (n *seqNotifier) SendSystem(_ context.Context, m domain.Message) (chat.AckJSON, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.fail != nil {
		return chat.AckJSON{}, n.fail
	}
	n.seqs[m.ConversationID]++
	m.Seq = n.seqs[m.ConversationID]
	n.sent = append(n.sent, m)
	return chat.AckJSON{AckType: "accepted", ConversationID: m.ConversationID, Seq: m.Seq}, nil
}

// advance simulates n chat messages allocated in a conversation.
func (n *seqNotifier) advance(groupID string, by int64) int64 {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.seqs[domain.GroupConversationID(groupID)] += by
	return n.seqs[domain.GroupConversationID(groupID)]
}

func (n *seqNotifier) setFail(err error) {
	n.mu.Lock()
	n.fail = err
	n.mu.Unlock()
}

// last returns the latest notification and its decoded content.
func (n *seqNotifier) last(t *testing.T) (domain.Message, group.NotificationJSON) {
	t.Helper()
	n.mu.Lock()
	defer n.mu.Unlock()
	if len(n.sent) == 0 {
		t.Fatal("no notification sent")
	}
	m := n.sent[len(n.sent)-1]
	var body group.NotificationJSON
	if err := json.Unmarshal([]byte(m.Content.Custom), &body); err != nil {
		t.Fatalf("notification content %q: %v", m.Content.Custom, err)
	}
	return m, body
}

func (n *seqNotifier) count() int {
	n.mu.Lock()
	defer n.mu.Unlock()
	return len(n.sent)
}

// frame is one push a fake connection received.
type frame struct {
	conn    string
	code    int
	seq     int64 // 2001: the message's seq; 2102: max_seq
	msgType int
	sender  string
}

// fakeRegistry is an in-memory connection registry that records every
// frame per user and connection.
type fakeRegistry struct {
	mu      sync.Mutex
	conns   map[string][]string
	got     map[string][]frame
	changed chan struct{}
}

func newFakeRegistry() *fakeRegistry {
	return &fakeRegistry{conns: map[string][]string{}, got: map[string][]frame{}, changed: make(chan struct{}, 1)}
}

func (r *fakeRegistry) connect(user string, connIDs ...string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(connIDs) == 0 {
		connIDs = []string{user + "/c1"}
	}
	r.conns[user] = append(r.conns[user], connIDs...)
}

func decodeFrame(f ws.Frame) (frame, error) {
	var w struct {
		ReqIdentifier int `json:"req_identifier"`
		Data          struct {
			Seq      int64  `json:"seq"`
			MaxSeq   int64  `json:"max_seq"`
			MsgType  int    `json:"msg_type"`
			SenderID string `json:"sender_id"`
		} `json:"data"`
	}
	if err := json.Unmarshal(f.Bytes(), &w); err != nil {
		return frame{}, err
	}
	out := frame{code: w.ReqIdentifier, seq: w.Data.Seq, msgType: w.Data.MsgType, sender: w.Data.SenderID}
	if w.ReqIdentifier == wire.PushGroupNotify {
		out.seq = w.Data.MaxSeq
	}
	return out, nil
}

func (r *fakeRegistry) PushToUser(_ context.Context, userID string, f ws.Frame, exceptConn string) int {
	fr, err := decodeFrame(f)
	if err != nil {
		panic(err)
	}
	r.mu.Lock()
	n := 0
	for _, c := range r.conns[userID] {
		if c != exceptConn {
			fr.conn = c
			r.got[userID] = append(r.got[userID], fr)
			n++
		}
	}
	r.mu.Unlock()
	select {
	case r.changed <- struct{}{}:
	default:
	}
	return n
}

func (r *fakeRegistry) PushToUsers(ctx context.Context, userIDs []string, f ws.Frame, exceptConn string) int {
	n := 0
	for _, u := range userIDs {
		n += r.PushToUser(ctx, u, f, exceptConn)
	}
	return n
}

func (r *fakeRegistry) Online(userID string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.conns[userID]) > 0
}

// PushToConn and ConnCount complete ws.Registry for ws.NewPushes; the
// pushes under test go to users, not to one connection.
func (r *fakeRegistry) PushToConn(ctx context.Context, userID, _ string, f ws.Frame) bool {
	return r.PushToUser(ctx, userID, f, "") > 0
}

func (r *fakeRegistry) ConnCount() int { return 0 }

// frames returns a copy of what user received.
func (r *fakeRegistry) frames(user string) []frame {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]frame(nil), r.got[user]...)
}

// reset forgets every received frame.
func (r *fakeRegistry) reset() {
	r.mu.Lock()
	r.got = map[string][]frame{}
	r.mu.Unlock()
}

// waitFor polls cond (under the registry's lock) until it holds.
func (r *fakeRegistry) waitFor(t *testing.T, what string, cond func(got map[string][]frame) bool) {
	t.Helper()
	deadline := time.NewTimer(15 * time.Second)
	defer deadline.Stop()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		r.mu.Lock()
		ok := cond(r.got)
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

// env is the group service on a fresh MariaDB database and Redis prefix,
// with the seq notifier standing in for the message pipeline.
type env struct {
	t        testing.TB
	cfg      configs.Config
	db       *store.DB
	rdb      *redis.Client
	keys     store.Keys
	repo     *store.GroupRepo
	users    *store.UserRepo
	cache    *store.GroupCache
	members  *group.Members
	fanout   *group.Fanout
	reg      *fakeRegistry
	notifier *seqNotifier
	svc      *group.Service
}

func newEnv(t *testing.T, tweak ...func(*configs.Config)) *env {
	t.Helper()
	return newEnvTB(t, tweak...)
}

// newEnvTB is newEnv for tests and benchmarks.
func newEnvTB(t testing.TB, tweak ...func(*configs.Config)) *env {
	t.Helper()
	cfg := configs.Default()
	for _, f := range tweak {
		f(&cfg)
	}
	db := storetest.MySQL(t)
	rdb, prefix := storetest.Redis(t)
	e := &env{t: t, cfg: cfg, db: db, rdb: rdb, keys: store.Keys{Prefix: prefix}, repo: store.NewGroupRepo(db),
		users: store.NewUserRepo(db), reg: newFakeRegistry(), notifier: newSeqNotifier()}
	e.cache = store.NewGroupCache(rdb, e.keys, cfg.Group.MemberCacheTTL)
	e.members = group.NewMembers(e.repo, e.cache, cfg.Group, nil, quiet)
	e.fanout = group.NewFanout(e.members, ws.NewPushes(e.reg, quiet), cfg.Group.Push, nil)
	e.svc = e.service(e.notifier)
	return e
}

// service returns a group service over the env's stores with notifier.
func (e *env) service(n group.Notifier) *group.Service {
	return group.NewService(group.Deps{Config: e.cfg.Group, Groups: e.repo, Users: e.users, Members: e.members,
		Shared: store.NewContacts(e.db), Locks: e.cache, Notifier: n, Log: quiet})
}

// process returns member lookups of another process: its own local cache
// over the same Redis and database.
func (e *env) process() *group.Members {
	return group.NewMembers(e.repo, e.cache, e.cfg.Group, nil, quiet)
}

// addUsers registers users.
func (e *env) addUsers(ids ...string) {
	e.t.Helper()
	storetest.AddUsers(e.t, e.db, ids...)
}

// users returns n user IDs "prefix0000".."prefix{n-1}".
func userIDs(prefix string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("%s%04d", prefix, i)
	}
	return out
}

// create makes a group owned by owner with members through the service.
func (e *env) create(owner string, members ...string) group.GroupJSON {
	e.t.Helper()
	g, err := e.svc.Create(context.Background(), owner, group.CreateRequest{Name: "team", MemberIDs: members, JoinPolicy: group.PolicyOpen})
	if err != nil {
		e.t.Fatalf("create: %v", err)
	}
	return g
}

// member returns a member row from the database.
func (e *env) member(groupID, userID string) domain.GroupMember {
	e.t.Helper()
	m, err := e.repo.Member(context.Background(), groupID, userID)
	if err != nil {
		e.t.Fatalf("member %s: %v", userID, err)
	}
	return m
}

// cursor returns a member's seq_users row.
func (e *env) cursor(groupID, userID string) domain.Cursor {
	e.t.Helper()
	c, err := store.NewCursorRepo(e.db).Get(context.Background(), userID, domain.GroupConversationID(groupID))
	if err != nil {
		e.t.Fatal(err)
	}
	return c
}

// wantReason fails unless err maps to reason on the wire.
func wantReason(t *testing.T, err error, reason wire.Reason) {
	t.Helper()
	if err == nil {
		t.Fatalf("no error, want %s", reason)
	}
	if got := wire.FromError(err).Reason; got != reason {
		t.Fatalf("error %v is %s on the wire, want %s", err, got, reason)
	}
}

// must(f())(t) returns f's value and fails t on f's error.
func must[T any](v T, err error) func(t testing.TB) T {
	return func(t testing.TB) T {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
}

var errPipelineDown = errors.New("pipeline down")
