package group_test

import (
	"context"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/redis/go-redis/v9"

	"github.com/nexo-im/nexo/domain"
	"github.com/nexo-im/nexo/gateway/wire"
	"github.com/nexo-im/nexo/services/group"
	"github.com/nexo-im/nexo/store"
)

// TestEveryChangeInvalidatesTheCache: another process that has the group
// in its local cache sees each change as soon as the change's call returns.
func TestEveryChangeInvalidatesTheCache(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.addUsers("alice", "bob", "carol", "dave", "erin", "fred")
	g := e.create("alice", "bob", "carol", "dave")
	gid := g.GroupID
	other := e.process()
	name := "renamed"

	for _, tc := range []struct {
		name   string
		change func() error
		check  func(t *testing.T)
	}{
		{"join", func() error { _, err := e.svc.Join(bg, "erin", gid); return err }, func(t *testing.T) {
			if err := other.CheckSend(bg, gid, "erin"); err != nil {
				t.Fatalf("joiner refused: %v", err)
			}
		}},
		{"invite", func() error {
			_, err := e.svc.Invite(bg, "bob", group.UsersRequest{GroupID: gid, UserIDs: []string{"fred"}})
			return err
		}, func(t *testing.T) {
			if err := other.CheckSend(bg, gid, "fred"); err != nil {
				t.Fatalf("invitee refused: %v", err)
			}
		}},
		{"quit", func() error { _, err := e.svc.Quit(bg, "erin", gid); return err }, func(t *testing.T) {
			wantReason(t, other.CheckSend(bg, gid, "erin"), wire.ReasonMemberNotActive)
			if _, hi, _ := other.Bounds(bg, gid, "erin"); hi == 0 {
				t.Fatal("no cap after quit")
			}
		}},
		{"kick", func() error {
			_, err := e.svc.Kick(bg, "alice", group.UsersRequest{GroupID: gid, UserIDs: []string{"fred"}})
			return err
		}, func(t *testing.T) {
			wantReason(t, other.CheckSend(bg, gid, "fred"), wire.ReasonMemberNotActive)
		}},
		{"set_role", func() error {
			_, err := e.svc.SetRole(bg, "alice", group.SetRoleRequest{GroupID: gid, UserID: "bob", RoleLevel: 60})
			return err
		}, func(t *testing.T) {
			if role, err := other.CheckMember(bg, gid, "bob"); err != nil || role != domain.RoleAdmin {
				t.Fatalf("bob's role %d %v", role, err)
			}
		}},
		{"transfer", func() error {
			_, err := e.svc.Transfer(bg, "alice", group.TransferRequest{GroupID: gid, NewOwnerID: "carol"})
			return err
		}, func(t *testing.T) {
			g, _, err := other.Group(bg, gid)
			role, _ := other.CheckMember(bg, gid, "carol")
			if err != nil || g.OwnerUserID != "carol" || role != domain.RoleOwner {
				t.Fatalf("after transfer: %+v role %d %v", g, role, err)
			}
		}},
		{"update", func() error {
			_, err := e.svc.Update(bg, "carol", group.UpdateRequest{GroupID: gid, Name: &name})
			return err
		}, func(t *testing.T) {
			if g, _, _ := other.Group(bg, gid); g.Name != "renamed" {
				t.Fatalf("name %q", g.Name)
			}
		}},
		{"dismiss", func() error { _, err := e.svc.Dismiss(bg, "carol", gid); return err }, func(t *testing.T) {
			wantReason(t, other.CheckSend(bg, gid, "bob"), wire.ReasonGroupDismissed)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// Warm the other process's local copy, then change.
			if _, _, err := other.Group(bg, gid); err != nil {
				t.Fatal(err)
			}
			before := must(e.cache.Version(bg, gid))(t)
			if err := tc.change(); err != nil {
				t.Fatal(err)
			}
			if after := must(e.cache.Version(bg, gid))(t); after == before {
				t.Fatalf("version unchanged by %s", tc.name)
			}
			tc.check(t)
		})
	}
}

// TestCreateInvalidatesANegativeLookup: a lookup of a group ID before the
// group exists is not remembered past its creation.
func TestCreateInvalidatesANegativeLookup(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.addUsers("alice", "bob", "carol")
	e.create("alice", "bob", "carol")
	// Remember "not found" for a group ID, then create a group under it.
	other := e.process()
	wantReason(t, other.CheckSend(bg, "later", "alice"), wire.ReasonGroupNotFound)
	if _, err := e.repo.Create(bg, domain.Group{ID: "later", Name: "l", CreatorUserID: "alice", OwnerUserID: "alice", JoinPolicy: "open"},
		[]domain.GroupMember{{UserID: "alice", RoleLevel: domain.RoleOwner, JoinSeq: 1}}); err != nil {
		t.Fatal(err)
	}
	wantReason(t, other.CheckSend(bg, "later", "alice"), wire.ReasonGroupNotFound) // still the remembered answer
	if err := e.members.Invalidate(bg, "later"); err != nil {
		t.Fatal(err)
	}
	if err := other.CheckSend(bg, "later", "alice"); err != nil {
		t.Fatalf("after invalidation: %v", err)
	}
}

func counter(t *testing.T, reg *prometheus.Registry, name, label string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			if label == "" || labelIs(m, label) {
				return m.GetCounter().GetValue()
			}
		}
	}
	return 0
}

func labelIs(m *dto.Metric, v string) bool {
	for _, l := range m.GetLabel() {
		if l.GetValue() == v {
			return true
		}
	}
	return false
}

// TestLookupsAreServedLocallyUntilAChange counts where lookups are answered.
func TestLookupsAreServedLocallyUntilAChange(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.addUsers("alice", "bob", "carol")
	g := e.create("alice", "bob", "carol")
	reg := prometheus.NewRegistry()
	m := group.NewMembers(e.repo, e.cache, e.cfg.Group, reg, quiet)
	for i := 0; i < 10; i++ {
		if err := m.CheckSend(bg, g.GroupID, "bob"); err != nil {
			t.Fatal(err)
		}
	}
	const name = "nexo_group_member_cache_lookups_total"
	local, redisHits, db := counter(t, reg, name, "local"), counter(t, reg, name, "redis"), counter(t, reg, name, "db")
	if db+redisHits != 1 || local != 9 {
		t.Fatalf("10 lookups: local %v, redis %v, db %v; want one load then 9 local hits", local, redisHits, db)
	}
	// A change elsewhere: the next lookup reloads (the Redis copy was dropped).
	if err := e.members.Invalidate(bg, g.GroupID); err != nil {
		t.Fatal(err)
	}
	_ = m.CheckSend(bg, g.GroupID, "bob")
	if got := counter(t, reg, name, "db"); got != db+1 {
		t.Fatalf("db loads %v after an invalidation, want %v", got, db+1)
	}
	// A third process finds the state in Redis.
	reg3 := prometheus.NewRegistry()
	third := group.NewMembers(e.repo, e.cache, e.cfg.Group, reg3, quiet)
	_ = third.CheckSend(bg, g.GroupID, "bob")
	if counter(t, reg3, name, "redis") != 1 {
		t.Fatal("a fresh process did not read the Redis copy")
	}
}

// TestRedisDownFallsBackToTheDatabase: lookups still answer (uncached),
// and changes are refused rather than left invisible to caches.
func TestRedisDownFallsBackToTheDatabase(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.addUsers("alice", "bob", "carol")
	g := e.create("alice", "bob", "carol")
	must(e.svc.Kick(bg, "alice", group.UsersRequest{GroupID: g.GroupID, UserIDs: []string{"carol"}}))(t)

	dead := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", MaxRetries: -1, DialerRetries: 1, DialTimeout: 200 * time.Millisecond})
	t.Cleanup(func() { _ = dead.Close() })
	cache := store.NewGroupCache(dead, e.keys, time.Minute)
	m := group.NewMembers(e.repo, cache, e.cfg.Group, nil, quiet)
	if err := m.CheckSend(bg, g.GroupID, "bob"); err != nil {
		t.Fatalf("member refused with Redis down: %v", err)
	}
	wantReason(t, m.CheckSend(bg, g.GroupID, "carol"), wire.ReasonMemberNotActive)
	if _, hi, err := m.Bounds(bg, g.GroupID, "carol"); err != nil || hi == 0 {
		t.Fatalf("kicked member's bounds with Redis down: %d %v", hi, err)
	}
	svc := group.NewService(group.Deps{Config: e.cfg.Group, Groups: e.repo, Users: e.users, Members: m, Locks: cache,
		Notifier: e.notifier, Log: quiet})
	ctx, cancel := context.WithTimeout(bg, 5*time.Second)
	defer cancel()
	_, err := svc.Kick(ctx, "alice", group.UsersRequest{GroupID: g.GroupID, UserIDs: []string{"bob"}})
	wantReason(t, err, wire.ReasonServerBusy)
	if e.member(g.GroupID, "bob").Status != domain.MemberNormal {
		t.Fatal("a change was written while its cache could not be invalidated")
	}
}

// TestMemberSettingIsPatchedInPlace: a member's recv_msg_opt change
// updates the cached member list in place; neither this process nor
// another one reloads the list from the database (any
// member could otherwise force a large group's list to reload on every
// settings change).
func TestMemberSettingIsPatchedInPlace(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	users := userIDs("m", 200)
	e.addUsers(users...)
	g := e.create(users[0], users[1:]...)
	const name = "nexo_group_member_cache_lookups_total"
	regA, regB := prometheus.NewRegistry(), prometheus.NewRegistry()
	a := group.NewMembers(e.repo, e.cache, e.cfg.Group, regA, quiet)
	b := group.NewMembers(e.repo, e.cache, e.cfg.Group, regB, quiet)
	for _, m := range []*group.Members{a, b} { // both hold the list
		if err := m.CheckSend(bg, g.GroupID, users[5]); err != nil {
			t.Fatal(err)
		}
	}
	dbA, dbB := counter(t, regA, name, "db"), counter(t, regB, name, "db")
	before := must(e.cache.Version(bg, g.GroupID))(t)

	if err := a.SetRecvMsgOpt(bg, g.GroupID, users[7], 2); err != nil {
		t.Fatal(err)
	}
	if after := must(e.cache.Version(bg, g.GroupID))(t); after == before {
		t.Fatal("version unchanged: other processes would not see the setting")
	}
	_, st, err := e.cache.Read(bg, g.GroupID)
	if err != nil || st == nil {
		t.Fatalf("the Redis copy was dropped (%v): the list would be reloaded", err)
	}
	if got := st.Members[users[7]].RecvMsgOpt; got != 2 {
		t.Fatalf("cached recv_msg_opt %d, want 2", got)
	}
	if len(st.Members) != 200 || st.Members[users[8]].RecvMsgOpt != 0 {
		t.Fatalf("other members changed: %d members, %+v", len(st.Members), st.Members[users[8]])
	}
	for _, m := range []*group.Members{a, b} {
		if err := m.CheckSend(bg, g.GroupID, users[7]); err != nil {
			t.Fatal(err)
		}
	}
	if counter(t, regA, name, "db") != dbA || counter(t, regB, name, "db") != dbB {
		t.Fatalf("the member list was reloaded from the database: db lookups %v→%v and %v→%v",
			dbA, counter(t, regA, name, "db"), dbB, counter(t, regB, name, "db"))
	}
	// The changing process patched its own copy; the other re-read Redis.
	if got := counter(t, regB, name, "redis"); got == 0 {
		t.Fatal("the other process did not pick up the patched copy from Redis")
	}
	// With nothing cached for the group it falls back to an invalidation.
	if err := e.members.Invalidate(bg, g.GroupID); err != nil {
		t.Fatal(err)
	}
	if err := a.SetRecvMsgOpt(bg, g.GroupID, users[7], 1); err != nil {
		t.Fatal(err)
	}
}
