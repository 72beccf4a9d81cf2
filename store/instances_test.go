package store_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/nexo-im/nexo/store"
	"github.com/nexo-im/nexo/store/storetest"
)

func TestInstances(t *testing.T) {
	for name, open := range storetest.RedisBackends() {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			rdb, keys := open(t)
			const ttl = 5 * time.Second // generous: a loaded machine delays heartbeats by seconds
			s := store.NewInstances(rdb, keys, ttl)

			a, err := s.Register(ctx, store.Instance{ID: "a", Boot: store.NewBootToken(), Addr: "h:1"}, 0)
			if err != nil {
				t.Fatal(err)
			}
			b, err := s.Register(ctx, store.Instance{ID: "b", Boot: store.NewBootToken()}, 0)
			if err != nil {
				t.Fatal(err)
			}
			if b.Epoch <= a.Epoch {
				t.Fatalf("epochs %d then %d: a later registration must have a larger epoch", a.Epoch, b.Epoch)
			}
			// Same boot again (a process re-registering) is allowed and keeps its epoch.
			if again, err := s.Register(ctx, a, 0); err != nil || again.Epoch != a.Epoch {
				t.Fatalf("same boot re-register: %+v %v (epoch was %d)", again, err, a.Epoch)
			}

			// Another boot while a heartbeats: refused once the renewal is seen.
			stop := make(chan struct{})
			done := make(chan struct{})
			go func() {
				defer close(done)
				for {
					select {
					case <-stop:
						return
					case <-time.After(100 * time.Millisecond):
						_ = s.Heartbeat(ctx, a, 7)
						_ = s.Heartbeat(ctx, b, 0)
					}
				}
			}()
			_, err = s.Register(ctx, store.Instance{ID: "a", Boot: store.NewBootToken()}, 2*ttl)
			close(stop)
			<-done
			if !errors.Is(err, store.ErrInstanceTaken) {
				t.Fatalf("register over a live holder: %v, want ErrInstanceTaken", err)
			}

			live, err := s.Live(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if len(live) != 2 || live[0].ID != "a" || live[0].Conns != 7 || live[0].Addr != "h:1" || live[1].ID != "b" {
				t.Fatalf("live = %+v", live)
			}

			// a leaves; b stops heartbeating now (a crash) and lapses after the TTL.
			if err := s.Leave(ctx, a); err != nil {
				t.Fatal(err)
			}
			// A restart of b (new boot) waits out the stale record instead of failing.
			began := time.Now()
			b2, err := s.Register(ctx, store.Instance{ID: "b", Boot: store.NewBootToken()}, 3*ttl)
			if err != nil {
				t.Fatalf("restart after a crash: %v", err)
			}
			if time.Since(began) < ttl/4 {
				t.Fatalf("restart did not wait for the stale record (%s)", time.Since(began))
			}
			if err := s.Heartbeat(ctx, b, 0); !errors.Is(err, store.ErrInstanceLost) {
				t.Fatalf("old boot heartbeat: %v, want ErrInstanceLost", err)
			}
			live, err = s.Live(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if len(live) != 1 || live[0].ID != "b" || live[0].Epoch != b2.Epoch {
				t.Fatalf("live after leave and restart = %+v", live)
			}
		})
	}
}

func TestMembershipIsLive(t *testing.T) {
	ctx := context.Background()
	rdb, keys := storetest.RedisBackends()["redis"](t)
	s := store.NewInstances(rdb, keys, 2*time.Second)
	m := store.NewMembership(s, store.Instance{ID: "x", Boot: store.NewBootToken()}, 500*time.Millisecond, nil, nil)
	changes := make(chan []store.Instance, 4)
	m.OnChange(func(live []store.Instance) { changes <- live })
	if err := m.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if got := <-changes; len(got) != 1 || got[0].ID != "x" {
		t.Fatalf("first change = %+v", got)
	}
	if !m.IsLive(ctx, m.Incarnation()) {
		t.Fatal("own incarnation not live")
	}
	// Another instance joins: its incarnation counts at once, before any heartbeat.
	y, err := s.Register(ctx, store.Instance{ID: "y", Boot: store.NewBootToken()}, 0)
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for !m.IsLive(ctx, store.Incarnation("y", y.Epoch)) {
		if time.Now().After(deadline) {
			t.Fatal("a joined instance is not live within 10 s")
		}
		time.Sleep(20 * time.Millisecond) // polling a condition, not synchronising
	}
	if m.IsLive(ctx, store.Incarnation("y", y.Epoch-1)) {
		t.Fatal("an earlier run of y counts as live")
	}
	if m.IsLive(ctx, "garbage") {
		t.Fatal("a malformed incarnation counts as live")
	}
}

// TestMembershipRecent: an instance that leaves the live set is in Recent
// (session events still go to it) until it registers again.
func TestMembershipRecent(t *testing.T) {
	ctx := context.Background()
	rdb, keys := storetest.RedisBackends()["redis"](t)
	s := store.NewInstances(rdb, keys, 5*time.Second)
	m := store.NewMembership(s, store.Instance{ID: "x", Boot: store.NewBootToken()}, time.Second, nil, nil)
	if err := m.Start(ctx); err != nil {
		t.Fatal(err)
	}
	y, err := s.Register(ctx, store.Instance{ID: "y", Boot: store.NewBootToken()}, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	if len(m.Live()) != 2 || len(m.Recent()) != 0 {
		t.Fatalf("live %+v, recent %+v: want x and y live, none recent", m.Live(), m.Recent())
	}
	if err := s.Leave(ctx, y); err != nil {
		t.Fatal(err)
	}
	if err := m.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	if r := m.Recent(); len(m.Live()) != 1 || len(r) != 1 || r[0].ID != "y" || r[0].Epoch != y.Epoch {
		t.Fatalf("after y left: live %+v, recent %+v", m.Live(), r)
	}
	if _, err := s.Register(ctx, y, 0); err != nil {
		t.Fatal(err)
	}
	if err := m.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	if len(m.Live()) != 2 || len(m.Recent()) != 0 {
		t.Fatalf("after y came back: live %+v, recent %+v", m.Live(), m.Recent())
	}
}
