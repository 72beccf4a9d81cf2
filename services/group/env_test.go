package group_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/nexo-im/nexo/configs"
	"github.com/nexo-im/nexo/domain"
	"github.com/nexo-im/nexo/gateway/wire"
	"github.com/nexo-im/nexo/gateway/ws"
	"github.com/nexo-im/nexo/gateway/ws/wstest"
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
	reg      *wstest.Recorder
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
		users: store.NewUserRepo(db), reg: wstest.NewRecorder(wstest.OnlyConnected), notifier: newSeqNotifier()}
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
