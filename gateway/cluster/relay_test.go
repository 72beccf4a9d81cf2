package cluster

import (
	"context"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/redis/go-redis/v9"

	"github.com/nexo-im/nexo/gateway/wire"
	"github.com/nexo-im/nexo/gateway/ws"
	"github.com/nexo-im/nexo/store"
	"github.com/nexo-im/nexo/store/storetest"
	"github.com/nexo-im/nexo/streams"
)

// fakeLocal is an instance's connection registry: users it holds, and what
// reached them.
type fakeLocal struct {
	ws.Registry // unused methods panic
	mu          sync.Mutex
	online      map[string]bool
	got         map[string][]string // user -> frame bytes, in arrival order
	changed     chan struct{}
	revoked     []string
	conn        map[string]string // user -> the ID of their one connection, when set
}

func newFakeLocal(users ...string) *fakeLocal {
	l := &fakeLocal{online: map[string]bool{}, got: map[string][]string{}, changed: make(chan struct{}, 1)}
	for _, u := range users {
		l.online[u] = true
	}
	return l
}

func (l *fakeLocal) note() {
	select {
	case l.changed <- struct{}{}:
	default:
	}
}

func (l *fakeLocal) PushToUser(_ context.Context, u string, f ws.Frame, except string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.online[u] || except != "" && l.conn[u] == except {
		return 0
	}
	l.got[u] = append(l.got[u], string(f.Bytes()))
	l.note()
	return 1
}

func (l *fakeLocal) PushToUsers(ctx context.Context, us []string, f ws.Frame, except string) int {
	n := 0
	for _, u := range us {
		n += l.PushToUser(ctx, u, f, except)
	}
	return n
}

func (l *fakeLocal) Online(u string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.online[u]
}

func (l *fakeLocal) OnlineOf(_ context.Context, us []string) []string {
	var out []string
	for _, u := range us {
		if l.Online(u) {
			out = append(out, u)
		}
	}
	return out
}

func (l *fakeLocal) RevokeSession(u string, _ int, jti string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.revoked = append(l.revoked, u+"/"+jti)
	l.note()
	return 1
}
func (l *fakeLocal) KickDisplaced(string, int, time.Time) int                  { return 0 }
func (l *fakeLocal) DisconnectUser(string, *wire.Error) int                    { return 0 }
func (l *fakeLocal) LoginPolicy() string                                       { return "single_per_platform" }
func (l *fakeLocal) ConnCount() int                                            { return 0 }
func (l *fakeLocal) PushToConn(context.Context, string, string, ws.Frame) bool { return false }

// wait polls cond under the lock until it holds or 5 s pass.
func (l *fakeLocal) wait(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.After(60 * time.Second) // generous: a loaded machine
	for {
		l.mu.Lock()
		ok := cond()
		l.mu.Unlock()
		if ok {
			return
		}
		select {
		case <-l.changed:
		case <-deadline:
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}

type fakePresence map[string][]string

func (p fakePresence) InstancesOf(_ context.Context, us []string) ([][]string, error) {
	out := make([][]string, len(us))
	for i, u := range us {
		out[i] = p[u]
	}
	return out, nil
}

type fakeMembership struct {
	self   store.Instance
	live   []store.Instance
	recent []store.Instance
}

func (m *fakeMembership) Self() store.Instance          { return m.self }
func (m *fakeMembership) Incarnation() string           { return store.Incarnation(m.self.ID, m.self.Epoch) }
func (m *fakeMembership) Live() []store.Instance        { return m.live }
func (m *fakeMembership) Recent() []store.Instance      { return m.recent }
func (m *fakeMembership) Refresh(context.Context) error { return nil }

// startRelay builds a relay over d, starts it and runs it until the
// test ends.
func startRelay(tb testing.TB, d Deps) *Relay {
	tb.Helper()
	r, err := NewRelay(d)
	if err != nil {
		tb.Fatal(err)
	}
	if err := r.Start(context.Background()); err != nil {
		tb.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = r.Run(ctx) }()
	tb.Cleanup(func() { cancel(); <-done })
	return r
}

// busFactory opens the bus of one instance; the two instances of a test
// share the backend (and its prefix).
type busFactory func(t testing.TB, self string) *streams.Bus

func busBackends(t testing.TB) map[string]busFactory {
	out := map[string]busFactory{}
	shared := streams.NewGoChannelBus(nil)
	t.Cleanup(func() { _ = shared.Close() })
	out["gochannel"] = func(testing.TB, string) *streams.Bus { return shared }

	out["redis"] = func(t testing.TB, self string) *streams.Bus {
		rdb, _ := storetest.Redis(t)
		prefix := redisPrefix(t)
		t.Cleanup(func() { storetest.DeletePrefix(rdb, prefix) })
		addr := rdb.Options().Addr
		pub, sub := redis.NewClient(&redis.Options{Addr: addr}), redis.NewClient(&redis.Options{Addr: addr})
		b, err := streams.NewRedisBus(context.Background(), pub, sub, prefix, self, 1000, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = b.Close() })
		return b
	}
	out["nats"] = func(t testing.TB, self string) *streams.Bus {
		b, err := streams.NewNATSBus(storetest.NATS(t), redisPrefix(t), time.Minute, 1000, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = b.Close() })
		return b
	}
	return out
}

var prefixes sync.Map

// redisPrefix is one key prefix per test, shared by its instances.
func redisPrefix(t testing.TB) string {
	p, _ := prefixes.LoadOrStore(t.Name(), storetest.RandomName("bus"))
	return p.(string)
}

// TestClusterBusInbox: on every backend, pushes for users on another
// instance arrive there in envelopes of one or more pushes (the outbox),
// with the frame bytes unchanged and in publish order; session events arrive; an envelope older
// than inbox_max_age is dropped and counted.
func TestClusterBusInbox(t *testing.T) {
	for name, open := range busBackends(t) {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			a := &store.Instance{ID: "a", Epoch: 1}
			b := &store.Instance{ID: "b", Epoch: 2}
			live := []store.Instance{*a, *b}
			presence := fakePresence{"u1": {"b#2"}, "u2": {"b#2", "a#1"}, "u3": {"a#1"}}
			localA, localB := newFakeLocal("u2", "u3"), newFakeLocal("u1", "u2")
			mk := func(self *store.Instance, l *fakeLocal) *Relay {
				return startRelay(t, Deps{Local: l, Presence: presence, Membership: &fakeMembership{self: *self, live: live},
					Bus: open(t, self.ID), MaxAge: time.Second})
			}
			ra := mk(a, localA)
			rb := mk(b, localB)

			const n = 20
			want := make([]string, n)
			for i := range n {
				want[i] = `{"req_identifier":2001,"data":{"seq":` + itoa(i) + `}}`
				ra.PushToUsers(ctx, []string{"u1", "u2", "u3"}, ws.FrameFromBytes([]byte(want[i])), "")
			}
			localB.wait(t, "every frame for u1 and u2 on b", func() bool { return len(localB.got["u1"]) == n && len(localB.got["u2"]) == n })
			localA.wait(t, "local frames on a", func() bool { return len(localA.got["u2"]) == n && len(localA.got["u3"]) == n })
			for _, u := range []string{"u1", "u2"} {
				if !slices.Equal(localB.got[u], want) {
					t.Fatalf("%s on b got frames out of order or changed", u)
				}
			}
			// The outbox batches: at most one envelope per push, at least one.
			// (the counter moves after Publish returns, maybe after delivery)
			sent := ra.m.sent.WithLabelValues(kindPushes)
			for deadline := time.Now().Add(5 * time.Second); testutilValue(sent) < 1 && time.Now().Before(deadline); {
				time.Sleep(time.Millisecond) // polling a counter with a deadline
			}
			if got := testutilValue(sent); got < 1 || got > n {
				t.Fatalf("a published %v pushes envelopes for %d pushes to one instance, want 1 to %d", got, n, n)
			}

			rb.RevokeSession(ctx, "u3", 5, "jti-1")
			localA.wait(t, "the revocation on a", func() bool { return slices.Contains(localA.revoked, "u3/jti-1") })

			// A stale envelope: dropped on arrival, counted.
			old := streams.BusEnvelope{Kind: kindPush, Users: []string{"u1"}, Payload: []byte(`{"stale":true}`), From: "a#1", At: time.Now().Add(-time.Minute)}
			if err := ra.bus.Publish(ctx, "b", old); err != nil {
				t.Fatal(err)
			}
			ra.PushToUsers(ctx, []string{"u1"}, ws.FrameFromBytes([]byte(`{"after":true}`)), "")
			localB.wait(t, "the frame after the stale one", func() bool { return len(localB.got["u1"]) == n+1 })
			if slices.Contains(localB.got["u1"], `{"stale":true}`) || testutilValue(rb.m.stale) != 1 {
				t.Fatalf("stale envelope delivered or not counted (stale=%v)", testutilValue(rb.m.stale))
			}
		})
	}
}

func itoa(i int) string { return strconv.Itoa(i) }

func testutilValue(c prometheus.Collector) float64 { return testutil.ToFloat64(c) }

// TestSessionEventsReachARecentInstance: an instance that dropped out of
// the live set a moment ago (a heartbeat lapsed in a stall) still gets
// session events, which are never repeated.
func TestSessionEventsReachARecentInstance(t *testing.T) {
	for name, open := range busBackends(t) {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			a := store.Instance{ID: "a", Epoch: 1}
			b := store.Instance{ID: "b", Epoch: 2}
			localB := newFakeLocal("u1")
			ra := startRelay(t, Deps{Local: newFakeLocal(), Presence: fakePresence{"u1": {"b#2"}},
				Membership: &fakeMembership{self: a, live: []store.Instance{a}, recent: []store.Instance{b}}, Bus: open(t, "a"), MaxAge: time.Minute})
			startRelay(t, Deps{Local: localB, Presence: fakePresence{}, Membership: &fakeMembership{self: b, live: []store.Instance{a, b}},
				Bus: open(t, "b"), MaxAge: time.Minute})
			ra.RevokeSession(ctx, "u1", 5, "jti-1")
			localB.wait(t, "the revocation on the recent instance", func() bool { return slices.Contains(localB.revoked, "u1/jti-1") })
		})
	}
}

// TestInboxNoConnectionCountsOnlyMisses: a push from the inbox counts a
// recipient with no connection here, not a sender whose only connection
// here is the one the push excepts (its own sending connection).
func TestInboxNoConnectionCountsOnlyMisses(t *testing.T) {
	local := newFakeLocal("alice", "bob")
	local.conn = map[string]string{"alice": "conn-a"}
	r, err := NewRelay(Deps{Local: local, Presence: fakePresence{}, Membership: &fakeMembership{}, Bus: &streams.Bus{}})
	if err != nil {
		t.Fatal(err)
	}
	r.pushLocal(context.Background(), streams.BusPush{Users: []string{"alice", "bob", "gone"}, Except: "conn-a", Frame: []byte(`{}`)})
	if got := testutil.ToFloat64(r.m.noConn); got != 1 {
		t.Fatalf("inbox_no_connection = %v, want 1 (only the user with no connection here)", got)
	}
	r.pushLocal(context.Background(), streams.BusPush{Users: []string{"alice"}, Frame: []byte(`{}`)})
	if got := testutil.ToFloat64(r.m.noConn); got != 1 || len(local.got["alice"]) != 1 {
		t.Fatalf("inbox_no_connection = %v, alice got %d frames", got, len(local.got["alice"]))
	}
}
