package presence_test

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/nexo-im/nexo/domain"
	"github.com/nexo-im/nexo/services/presence"
	"github.com/nexo-im/nexo/store"
	"github.com/nexo-im/nexo/store/storetest"
)

var quiet = slog.New(slog.DiscardHandler)

// events records user_online / user_offline.
type events struct {
	mu  sync.Mutex
	got []string
}

func (e *events) UserOnline(_ context.Context, userID string, _ int) { e.add("online:" + userID) }

func (e *events) UserOffline(_ context.Context, userID string, _ int) { e.add("offline:" + userID) }

func (e *events) add(s string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.got = append(e.got, s)
}

func (e *events) list() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return slices.Clone(e.got)
}

// pushes records every push with its recipients and the connection left out.
type pushes struct {
	mu  sync.Mutex
	got []sent
}

type sent struct {
	users  []string
	push   domain.Push
	except string
}

func (p *pushes) PushToUsers(_ context.Context, userIDs []string, push domain.Push, exceptConn string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.got = append(p.got, sent{users: slices.Sorted(slices.Values(userIDs)), push: push, except: exceptConn})
	return len(userIDs)
}

// members is a group's active members.
type members map[string]map[string]int

func (m members) ActiveMembers(_ context.Context, groupID string) (map[string]int, error) {
	if g, ok := m[groupID]; ok {
		return g, nil
	}
	return nil, domain.ErrGroupNotFound
}

type env struct {
	rdb    *redis.Client
	keys   store.Keys
	record *store.Presence
	rt     *presence.Realtime
	events *events
	pushes *pushes
}

func newEnv(t *testing.T, refresh, ttl time.Duration) *env {
	t.Helper()
	rdb, prefix := storetest.Redis(t)
	e := &env{rdb: rdb, keys: store.Keys{Prefix: prefix}, events: &events{}, pushes: &pushes{}}
	e.record = store.NewPresence(rdb, e.keys, "gw#1", ttl)
	e.rt = presence.NewRealtime(presence.RealtimeDeps{Store: e.record, Events: e.events, Pusher: e.pushes,
		Members: members{"g1": {"alice": 1, "bob": 1, "carol": 1}}, Refresh: refresh, TTL: ttl, Log: quiet})
	return e
}

// connect registers a connection; the returned func closes it.
func (e *env) connect(user, conn string, platform int) context.CancelFunc {
	ctx, cancel := context.WithCancel(context.Background())
	e.rt.OnConnect(ctx, user, conn, platform)
	return cancel
}

func (e *env) online(t *testing.T, user string) bool {
	t.Helper()
	got, err := e.record.Lookup(context.Background(), []string{user})
	if err != nil {
		t.Fatal(err)
	}
	return got[0].Online
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond) // polling interval, not synchronisation
	}
}

// The record holds a user from the first connection to the last
// disconnect, with its TTL, and its ends are the online/offline events.
func TestRecordFollowsConnections(t *testing.T) {
	e := newEnv(t, time.Hour, time.Minute)
	close1 := e.connect("alice", "c1", 5)
	close2 := e.connect("alice", "c2", 2)
	if !e.online(t, "alice") {
		t.Fatal("alice offline after connecting")
	}
	key := e.keys.Key("sessions", "{alice}")
	if ttl := e.rdb.PTTL(context.Background(), key).Val(); ttl <= 0 || ttl > time.Minute {
		t.Fatalf("TTL %v, want in (0, 1m]", ttl)
	}
	ins, err := e.record.InstancesOf(context.Background(), []string{"alice"})
	if err != nil || !slices.Equal(ins[0], []string{"gw#1"}) {
		t.Fatalf("instances of alice: %v, %v", ins, err)
	}
	close1()
	waitFor(t, "the first connection's entry removed", func() bool { return e.rdb.HLen(context.Background(), key).Val() == 1 })
	if !e.online(t, "alice") {
		t.Fatal("alice offline while a connection remains")
	}
	close2()
	waitFor(t, "alice offline after the last disconnect", func() bool { return !e.online(t, "alice") })
	if err := e.rt.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got, want := e.events.list(), []string{"online:alice", "offline:alice"}; !slices.Equal(got, want) {
		t.Fatalf("events %v, want %v", got, want)
	}
}

// Run keeps the entries alive past their TTL, and writes back what Redis
// lost, background state included.
func TestRunRenewsTheRecord(t *testing.T) {
	e := newEnv(t, 50*time.Millisecond, 300*time.Millisecond)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- e.rt.Run(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	}()
	defer e.connect("alice", "c1", 5)()
	defer e.connect("alice", "c2", 2)()
	if _, err := e.rt.SetAppState(context.Background(), "alice", "c2", 2, presence.AppStateRequest{Background: true}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(3 * 300 * time.Millisecond) // three TTLs
	if !e.online(t, "alice") {
		t.Fatal("the record expired although Run kept running")
	}
	if err := e.rdb.Del(context.Background(), e.keys.Key("sessions", "{alice}")).Err(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "both entries written back", func() bool {
		got, err := e.record.Lookup(context.Background(), []string{"alice"})
		return err == nil && slices.Equal(got[0].Platforms, []int{2, 5})
	})
	vals := e.rdb.HGetAll(context.Background(), e.keys.Key("sessions", "{alice}")).Val()
	if vals["c1"] != "5:f:gw#1" || vals["c2"] != "2:b:gw#1" {
		t.Fatalf("entries written back: %v", vals)
	}
}

// Typing reaches the other party and the caller's other connections (not
// the one it came from), within the rate limit, from members only.
func TestTyping(t *testing.T) {
	e := newEnv(t, time.Hour, time.Minute)
	ctx := context.Background()
	res, err := e.rt.Typing(ctx, "alice", "c1", presence.TypingRequest{ConversationID: "si_alice_bob", Typing: true})
	if err != nil || res.Delivered != 2 {
		t.Fatalf("typing: %+v, %v", res, err)
	}
	got := e.pushes.got[0]
	want := presence.TypingJSON{ConversationID: "si_alice_bob", UserID: "alice", Typing: true}
	if !slices.Equal(got.users, []string{"alice", "bob"}) || got.except != "c1" || got.push.Kind != domain.PushTyping || got.push.Data != want {
		t.Fatalf("push %+v", got)
	}
	if _, err := e.rt.Typing(ctx, "carol", "c9", presence.TypingRequest{ConversationID: "sg_g1"}); err != nil {
		t.Fatal(err)
	}
	if u := e.pushes.got[1].users; !slices.Equal(u, []string{"alice", "bob", "carol"}) {
		t.Fatalf("group typing to %v", u)
	}
	for _, c := range []struct {
		user, conv string
		want       error
	}{
		{"dave", "si_alice_bob", domain.ErrNotConversationMember},
		{"dave", "sg_g1", domain.ErrNotConversationMember},
		{"alice", "sg_nope", domain.ErrGroupNotFound},
		{"alice", "nope", domain.ErrInvalidArgument},
	} {
		if _, err := e.rt.Typing(ctx, c.user, "c-"+c.user, presence.TypingRequest{ConversationID: c.conv}); !errors.Is(err, c.want) {
			t.Errorf("%s typing in %s: %v, want %v", c.user, c.conv, err, c.want)
		}
	}
	var limited error
	for range 10 {
		if _, err := e.rt.Typing(ctx, "bob", "c2", presence.TypingRequest{ConversationID: "si_alice_bob"}); err != nil {
			limited = err
			break
		}
	}
	if !errors.Is(limited, domain.ErrRateLimited) {
		t.Fatalf("10 indicators at once: %v, want rate limited", limited)
	}
}
