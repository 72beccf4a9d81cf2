package store_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/nexo-im/nexo/domain"
	"github.com/nexo-im/nexo/store"
	"github.com/nexo-im/nexo/store/storetest"
)

func member(user string, role domain.RoleLevel, joinSeq int64) domain.GroupMember {
	return domain.GroupMember{UserID: user, RoleLevel: role, JoinSeq: joinSeq}
}

// TestGroupRepoContract runs the group repository's expectations against
// every backend: creation with its implied rows, the membership life cycle
// (join, quit with a provisional then final cap, re-join as an upsert),
// roles, transfer, updates and the state the member cache loads.
func TestGroupRepoContract(t *testing.T) {
	for _, b := range storetest.Backends() {
		t.Run(b.Name, func(t *testing.T) {
			t.Parallel()
			db := b.Open(t)
			repo := store.NewGroupRepo(db)
			cursors := store.NewCursorRepo(db)
			ctx := context.Background()
			conv := domain.GroupConversationID("g1")

			g, err := repo.Create(ctx, domain.Group{ID: "g1", Name: "team", CreatorUserID: "alice", OwnerUserID: "alice", JoinPolicy: "open"},
				[]domain.GroupMember{member("alice", domain.RoleOwner, 1), member("bob", domain.RoleMember, 1), member("carol", domain.RoleMember, 1)})
			if err != nil {
				t.Fatal(err)
			}
			if g.CreatedAt == 0 || g.Status != domain.GroupNormal || g.OwnerUserID != "alice" {
				t.Fatalf("created %+v", g)
			}
			if _, err := repo.Create(ctx, domain.Group{ID: "g1", Name: "again", CreatorUserID: "x", JoinPolicy: "open"}, nil); !errors.Is(err, domain.ErrDuplicate) {
				t.Fatalf("duplicate group id: %v", err)
			}
			if _, err := repo.Get(ctx, "G1"); !errors.Is(err, domain.ErrGroupNotFound) {
				t.Fatalf("case-folded id found: %v", err)
			}
			if _, err := repo.Get(ctx, "nope"); !errors.Is(err, domain.ErrGroupNotFound) {
				t.Fatalf("unknown group: %v", err)
			}
			c, err := cursors.Get(ctx, "bob", conv)
			if err != nil || c.MinSeq != 1 || c.MaxSeq != 0 || c.ReadSeq != 0 {
				t.Fatalf("bob's cursor after create: %+v %v", c, err)
			}
			var convType, n int64
			db.Gorm.Table("conversations").Where("owner_id = ? AND conversation_id = ?", "carol", conv).Select("conversation_type").Scan(&convType)
			db.Gorm.Table("conversations").Where("conversation_id = ? AND group_id = ?", conv, "g1").Count(&n)
			if convType != int64(domain.SessionGroup) || n != 3 {
				t.Fatalf("conversation rows: type %d, %d rows", convType, n)
			}

			// dave joins at seq 7, then quits: provisional cap, then the final one.
			if err := repo.AddMembers(ctx, "g1", []domain.GroupMember{{UserID: "dave", RoleLevel: domain.RoleMember, JoinSeq: 7, InviterUserID: "bob"}}); err != nil {
				t.Fatal(err)
			}
			db.Gorm.Exec("INSERT INTO seq_conversations (conversation_id, max_seq, min_seq, reserved_seq) VALUES (?, 9, 0, 100)", conv)
			prev, err := repo.Deactivate(ctx, "g1", []string{"dave", "nobody"}, domain.MemberLeft)
			if err != nil || len(prev) != 1 || prev[0].UserID != "dave" || prev[0].Status != domain.MemberNormal || prev[0].InviterUserID != "bob" {
				t.Fatalf("deactivate: %+v %v", prev, err)
			}
			if c, _ := cursors.Get(ctx, "dave", conv); c.MinSeq != 7 || c.MaxSeq != 9 {
				t.Fatalf("provisional cap: %+v, want min 7 max 9 (saved max)", c)
			}
			if again, err := repo.Deactivate(ctx, "g1", []string{"dave"}, domain.MemberKicked); err != nil || len(again) != 0 {
				t.Fatalf("deactivating an inactive member changed %v (%v)", again, err)
			}
			if err := repo.SetCap(ctx, "g1", []string{"dave", "bob"}, 12); err != nil {
				t.Fatal(err)
			}
			if c, _ := cursors.Get(ctx, "dave", conv); c.MaxSeq != 12 {
				t.Fatalf("final cap: %+v", c)
			}
			if c, _ := cursors.Get(ctx, "bob", conv); c.MaxSeq != 0 {
				t.Fatalf("SetCap capped an active member: %+v", c)
			}

			// Re-join is an upsert: new join_seq, cap removed, read cursor moved up.
			if err := repo.AddMembers(ctx, "g1", []domain.GroupMember{member("dave", domain.RoleMember, 20)}); err != nil {
				t.Fatal(err)
			}
			m, err := repo.Member(ctx, "g1", "dave")
			if err != nil || m.Status != domain.MemberNormal || m.JoinSeq != 20 || m.InviterUserID != "" {
				t.Fatalf("re-joined: %+v %v", m, err)
			}
			if c, _ := cursors.Get(ctx, "dave", conv); c.MinSeq != 20 || c.MaxSeq != 0 || c.ReadSeq != 19 {
				t.Fatalf("re-joined cursor: %+v", c)
			}
			var rows int64
			db.Gorm.Table("group_members").Where("group_id = ? AND user_id = ?", "g1", "dave").Count(&rows)
			if rows != 1 {
				t.Fatalf("%d member rows for dave", rows)
			}
			if err := repo.SetCap(ctx, "g1", []string{"dave"}, 30); err != nil {
				t.Fatal(err)
			}
			if c, _ := cursors.Get(ctx, "dave", conv); c.MaxSeq != 0 {
				t.Fatalf("a late SetCap capped a re-joined member: %+v", c)
			}

			// A kick that could not be announced is undone.
			prev, err = repo.Deactivate(ctx, "g1", []string{"carol"}, domain.MemberKicked)
			if err != nil || len(prev) != 1 {
				t.Fatal(prev, err)
			}
			if err := repo.Reactivate(ctx, "g1", prev); err != nil {
				t.Fatal(err)
			}
			if m, _ := repo.Member(ctx, "g1", "carol"); m.Status != domain.MemberNormal {
				t.Fatalf("carol after reactivate: %+v", m)
			}
			if c, _ := cursors.Get(ctx, "carol", conv); c.MaxSeq != 0 {
				t.Fatalf("carol's cap after reactivate: %+v", c)
			}

			// Roles and transfer.
			if err := repo.SetRole(ctx, "g1", "bob", domain.RoleAdmin); err != nil {
				t.Fatal(err)
			}
			if err := repo.SetRole(ctx, "g1", "nobody", domain.RoleAdmin); !errors.Is(err, domain.ErrNotGroupMember) {
				t.Fatalf("set role of a non-member: %v", err)
			}
			if err := repo.Transfer(ctx, "g1", "alice", "nobody"); !errors.Is(err, domain.ErrNotGroupMember) {
				t.Fatalf("transfer to a non-member: %v", err)
			}
			if m, _ := repo.Member(ctx, "g1", "alice"); m.RoleLevel != domain.RoleOwner {
				t.Fatalf("failed transfer changed alice: %+v", m)
			}
			if err := repo.Transfer(ctx, "g1", "alice", "carol"); err != nil {
				t.Fatal(err)
			}
			got, _ := repo.MembersOf(ctx, "g1", []string{"alice", "carol", "zed"})
			if len(got) != 2 || got["alice"].RoleLevel != domain.RoleMember || got["carol"].RoleLevel != domain.RoleOwner {
				t.Fatalf("after transfer: %+v", got)
			}
			if g, _ := repo.Get(ctx, "g1"); g.OwnerUserID != "carol" || g.CreatorUserID != "alice" {
				t.Fatalf("group after transfer: %+v", g)
			}

			// Listing: owner, admins, members; only active ones.
			page, total, err := repo.ListMembers(ctx, "g1", 0, 10)
			if err != nil || total != 4 || len(page) != 4 || page[0].UserID != "carol" || page[1].UserID != "bob" {
				t.Fatalf("list: %+v total %d %v", page, total, err)
			}
			page, _, _ = repo.ListMembers(ctx, "g1", 3, 10)
			if len(page) != 1 || page[0].UserID != "dave" {
				t.Fatalf("second page: %+v", page)
			}

			// Updates, status, counts, a user's groups.
			name, policy := "renamed", "invite_only"
			g, err = repo.Update(ctx, "g1", store.GroupUpdate{Name: &name, JoinPolicy: &policy})
			if err != nil || g.Name != "renamed" || g.JoinPolicy != "invite_only" || g.Introduction != "" {
				t.Fatalf("update: %+v %v", g, err)
			}
			if err := repo.SetStatus(ctx, "g1", domain.GroupDismissed); err != nil {
				t.Fatal(err)
			}
			if err := repo.SetStatus(ctx, "nope", domain.GroupDismissed); !errors.Is(err, domain.ErrGroupNotFound) {
				t.Fatalf("dismiss unknown: %v", err)
			}
			if _, err := repo.Create(ctx, domain.Group{ID: "g2", Name: "two", CreatorUserID: "bob", OwnerUserID: "bob", JoinPolicy: "open"},
				[]domain.GroupMember{member("bob", domain.RoleOwner, 1), member("erin", domain.RoleMember, 1)}); err != nil {
				t.Fatal(err)
			}
			counts, err := repo.ActiveCounts(ctx, []string{"g1", "g2", "g3"})
			if err != nil || counts["g1"] != 4 || counts["g2"] != 2 || counts["g3"] != 0 {
				t.Fatalf("counts %v %v", counts, err)
			}
			groups, err := repo.UserGroups(ctx, "bob", 0, "", 0)
			if err != nil || len(groups) != 2 || groups[0].ID != "g1" || groups[0].Status != domain.GroupDismissed || groups[1].ID != "g2" {
				t.Fatalf("bob's groups: %+v %v", groups, err)
			}
			// Keyset pages: one group, then the one after it, then none.
			gpage, err := repo.UserGroups(ctx, "bob", 0, "", 1)
			if err != nil || len(gpage) != 1 || gpage[0].ID != "g1" {
				t.Fatalf("bob's first page: %+v %v", gpage, err)
			}
			gpage, err = repo.UserGroups(ctx, "bob", gpage[0].CreatedAt, gpage[0].ID, 1)
			if err != nil || len(gpage) != 1 || gpage[0].ID != "g2" {
				t.Fatalf("bob's second page: %+v %v", gpage, err)
			}
			if gpage, err = repo.UserGroups(ctx, "bob", gpage[0].CreatedAt, gpage[0].ID, 1); err != nil || len(gpage) != 0 {
				t.Fatalf("bob's page after the last: %+v %v", gpage, err)
			}

			// The state the member cache loads.
			db.Gorm.Exec("UPDATE conversations SET recv_msg_opt = 1 WHERE owner_id = ? AND conversation_id = ?", "erin", domain.GroupConversationID("g2"))
			st, err := repo.State(ctx, "g1")
			if err != nil {
				t.Fatal(err)
			}
			if st.Group.Status != domain.GroupDismissed || len(st.Members) != 4 {
				t.Fatalf("state: %+v", st)
			}
			if d := st.Members["dave"]; !d.Active() || d.JoinSeq != 20 || d.CapSeq != 0 {
				t.Fatalf("dave in state: %+v", d)
			}
			if st2, _ := repo.State(ctx, "g2"); st2.Members["erin"].RecvMsgOpt != 1 || st2.Members["bob"].RecvMsgOpt != 0 {
				t.Fatalf("recv_msg_opt in state: %+v", st2.Members)
			}
			if _, err := repo.State(ctx, "nope"); !errors.Is(err, domain.ErrGroupNotFound) {
				t.Fatalf("state of unknown: %v", err)
			}
		})
	}
}

// TestGroupRepoLargeBatches adds and removes more members than one
// statement carries.
func TestGroupRepoLargeBatches(t *testing.T) {
	for _, b := range storetest.Backends() {
		t.Run(b.Name, func(t *testing.T) {
			t.Parallel()
			repo := store.NewGroupRepo(b.Open(t))
			ctx := context.Background()
			members := []domain.GroupMember{member("owner", domain.RoleOwner, 1)}
			var ids []string
			for i := 0; i < 1203; i++ {
				id := fmt.Sprintf("u%04d", i)
				ids = append(ids, id)
				members = append(members, member(id, domain.RoleMember, 1))
			}
			if _, err := repo.Create(ctx, domain.Group{ID: "big", Name: "big", CreatorUserID: "owner", OwnerUserID: "owner", JoinPolicy: "open"}, members); err != nil {
				t.Fatal(err)
			}
			prev, err := repo.Deactivate(ctx, "big", ids[:700], domain.MemberKicked)
			if err != nil || len(prev) != 700 {
				t.Fatalf("deactivated %d: %v", len(prev), err)
			}
			st, err := repo.State(ctx, "big")
			if err != nil {
				t.Fatal(err)
			}
			active := 0
			for _, m := range st.Members {
				if m.Active() {
					active++
				}
			}
			if len(st.Members) != 1204 || active != 504 {
				t.Fatalf("%d rows, %d active", len(st.Members), active)
			}
			got, err := repo.MembersOf(ctx, "big", ids)
			if err != nil || len(got) != 1203 {
				t.Fatalf("members of: %d %v", len(got), err)
			}
		})
	}
}

// TestGroupApplicationsContract: join applications on every backend —
// applying twice is one application, answering needs a pending one, an
// answered application can be made again, and pending ones page by ID.
func TestGroupApplicationsContract(t *testing.T) {
	for _, b := range storetest.Backends() {
		t.Run(b.Name, func(t *testing.T) {
			t.Parallel()
			repo := store.NewGroupRepo(b.Open(t))
			ctx := context.Background()
			if _, err := repo.Create(ctx, domain.Group{ID: "g1", Name: "team", CreatorUserID: "alice", OwnerUserID: "alice",
				JoinPolicy: "approval", InvitePermission: "admins"}, []domain.GroupMember{member("alice", domain.RoleOwner, 1)}); err != nil {
				t.Fatal(err)
			}
			if g, err := repo.Get(ctx, "g1"); err != nil || g.InvitePermission != "admins" || g.JoinPolicy != "approval" {
				t.Fatalf("stored group %+v %v", g, err)
			}
			members := "members"
			if g, err := repo.Update(ctx, "g1", store.GroupUpdate{InvitePermission: &members}); err != nil || g.InvitePermission != "members" {
				t.Fatalf("updated invite_permission: %+v %v", g, err)
			}
			first, created, err := repo.Apply(ctx, domain.GroupApplication{GroupID: "g1", UserID: "bob", ReqMsg: "hi"})
			if err != nil || !created || first.ID == 0 || first.Status != domain.ApplicationPending || first.ReqMsg != "hi" || first.CreatedAt == 0 {
				t.Fatalf("apply: %+v %v %v", first, created, err)
			}
			again, created, err := repo.Apply(ctx, domain.GroupApplication{GroupID: "g1", UserID: "bob", ReqMsg: "hello?"})
			if err != nil || created || again.ID != first.ID || again.ReqMsg != "hi" {
				t.Fatalf("apply again: %+v %v %v", again, created, err)
			}
			for _, u := range []string{"carol", "dave"} {
				if _, _, err := repo.Apply(ctx, domain.GroupApplication{GroupID: "g1", UserID: u}); err != nil {
					t.Fatal(err)
				}
			}
			page, err := repo.PendingApplications(ctx, "g1", 0, 2)
			if err != nil || len(page) != 2 || page[0].UserID != "bob" || page[1].UserID != "carol" {
				t.Fatalf("first page %+v %v", page, err)
			}
			if page, err = repo.PendingApplications(ctx, "g1", page[1].ID, 2); err != nil || len(page) != 1 || page[0].UserID != "dave" {
				t.Fatalf("second page %+v %v", page, err)
			}
			if err := repo.AnswerApplication(ctx, "g1", "bob", "alice", domain.ApplicationRejected); err != nil {
				t.Fatal(err)
			}
			if err := repo.AnswerApplication(ctx, "g1", "bob", "alice", domain.ApplicationAccepted); !errors.Is(err, domain.ErrNotFound) {
				t.Fatalf("answering an answered application: %v", err)
			}
			if _, err := repo.PendingApplication(ctx, "g1", "bob"); !errors.Is(err, domain.ErrNotFound) {
				t.Fatalf("rejected application still pending: %v", err)
			}
			if err := repo.AnswerApplication(ctx, "g1", "zed", "alice", domain.ApplicationAccepted); !errors.Is(err, domain.ErrNotFound) {
				t.Fatalf("answering no application: %v", err)
			}
			// bob applies again after the rejection: a new application, listed last.
			renewed, created, err := repo.Apply(ctx, domain.GroupApplication{GroupID: "g1", UserID: "bob", ReqMsg: "please"})
			if err != nil || !created || renewed.ID <= first.ID || renewed.Status != domain.ApplicationPending {
				t.Fatalf("renewed: %+v %v %v", renewed, created, err)
			}
			all, err := repo.PendingApplications(ctx, "g1", 0, 10)
			if err != nil || len(all) != 3 || all[2].UserID != "bob" || all[2].ReqMsg != "please" {
				t.Fatalf("pending after renewal %+v %v", all, err)
			}
			if got, err := repo.PendingApplication(ctx, "g1", "carol"); err != nil || got.UserID != "carol" {
				t.Fatalf("carol's pending application %+v %v", got, err)
			}
		})
	}
}
