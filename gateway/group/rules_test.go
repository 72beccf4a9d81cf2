package group_test

import (
	"context"
	"slices"
	"testing"

	"github.com/nexo-im/nexo/configs"
	"github.com/nexo-im/nexo/domain"
	"github.com/nexo-im/nexo/gateway/group"
	"github.com/nexo-im/nexo/gateway/wire"
)

var bg = context.Background()

func TestCreateRules(t *testing.T) {
	t.Parallel()
	e := newEnv(t, func(c *configs.Config) { c.Group.MaxIDsPerRequest = 5 })
	e.addUsers("alice", "bob", "carol", "dave", "erin", "fred", "gina")

	for _, tc := range []struct {
		name    string
		members []string
		reason  wire.Reason
	}{
		{"creator alone", nil, wire.ReasonBadRequest},
		{"two people use single chat", []string{"bob"}, wire.ReasonBadRequest},
		{"repeats and the creator do not count", []string{"bob", "bob", "alice"}, wire.ReasonBadRequest},
		{"unregistered member", []string{"bob", "zed"}, wire.ReasonUserNotFound},
		{"more than max_ids_per_request", []string{"bob", "carol", "dave", "erin", "fred", "gina"}, wire.ReasonBadRequest},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := e.svc.Create(bg, "alice", group.CreateRequest{Name: "x", MemberIDs: tc.members})
			wantReason(t, err, tc.reason)
		})
	}
	if n := e.notifier.count(); n != 0 {
		t.Fatalf("%d notifications sent by refused creates", n)
	}

	g, err := e.svc.Create(bg, "alice", group.CreateRequest{Name: "team", MemberIDs: []string{"bob", "carol", "bob"}, Introduction: "hi", GroupType: 2})
	if err != nil {
		t.Fatal(err)
	}
	if g.OwnerUserID != "alice" || g.CreatorUserID != "alice" || g.MemberCount != 3 || g.Status != "normal" ||
		g.JoinPolicy != "open" || g.GroupType != 2 || g.Introduction != "hi" || g.CreatedAt == 0 {
		t.Fatalf("created %+v", g)
	}
	m, body := e.notifier.last(t)
	if m.MsgType != group.NotifyGroupCreated || m.SenderID != "alice" || m.ConversationID != "sg_"+g.GroupID ||
		!slices.Equal(body.UserIDs, []string{"alice", "bob", "carol"}) || body.Group == nil || *body.Group != g {
		t.Fatalf("creation notification %+v %+v", m, body)
	}
	for _, u := range []string{"alice", "bob", "carol"} {
		mem := e.member(g.GroupID, u)
		wantRole := domain.RoleMember
		if u == "alice" {
			wantRole = domain.RoleOwner
		}
		if mem.RoleLevel != wantRole || mem.JoinSeq != m.Seq || mem.Status != domain.MemberNormal {
			t.Errorf("%s: %+v", u, mem)
		}
		if c := e.cursor(g.GroupID, u); c.MinSeq != m.Seq || c.MaxSeq != 0 {
			t.Errorf("%s's bounds: %+v", u, c)
		}
	}
	if mem := e.member(g.GroupID, "bob"); mem.InviterUserID != "alice" {
		t.Errorf("bob's inviter %q", mem.InviterUserID)
	}
	var convs int64
	e.db.Gorm.Table("conversations").Where("conversation_id = ? AND conversation_type = 3 AND group_id = ?", "sg_"+g.GroupID, g.GroupID).Count(&convs)
	if convs != 3 {
		t.Fatalf("%d conversation rows, want 3", convs)
	}
	if err := e.members.CheckSend(bg, g.GroupID, "carol"); err != nil {
		t.Fatalf("a new member cannot send: %v", err)
	}
}

func TestJoinRules(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.addUsers("alice", "bob", "carol", "dave", "erin")
	g := e.create("alice", "bob", "carol")

	_, err := e.svc.Join(bg, "dave", "no-such-group")
	wantReason(t, err, wire.ReasonGroupNotFound)

	// Chat goes on before dave joins; his join_seq is his own notification's.
	e.notifier.advance(g.GroupID, 10)
	joined, err := e.svc.Join(bg, "dave", g.GroupID)
	if err != nil {
		t.Fatal(err)
	}
	n, body := e.notifier.last(t)
	if n.MsgType != group.NotifyMemberJoined || n.SenderID != "dave" || !slices.Equal(body.UserIDs, []string{"dave"}) {
		t.Fatalf("join notification %+v %+v", n, body)
	}
	if joined.JoinSeq != n.Seq || joined.JoinSeq != 12 || joined.RoleLevel != 20 || joined.Status != "normal" || joined.UserID != "dave" {
		t.Fatalf("joined %+v (notification seq %d)", joined, n.Seq)
	}
	if c := e.cursor(g.GroupID, "dave"); c.MinSeq != 12 || c.MaxSeq != 0 || c.ReadSeq != 11 {
		t.Fatalf("dave's bounds %+v", c)
	}
	if lo, hi, err := e.members.Bounds(bg, g.GroupID, "dave"); err != nil || lo != 12 || hi != 0 {
		t.Fatalf("Bounds(dave) = %d, %d, %v", lo, hi, err)
	}

	// Joining again changes nothing.
	before := e.notifier.count()
	again, err := e.svc.Join(bg, "dave", g.GroupID)
	if err != nil || again.JoinSeq != 12 || e.notifier.count() != before {
		t.Fatalf("second join: %+v %v, %d notifications", again, err, e.notifier.count()-before)
	}

	// Quit, chat, re-join: an upsert with a new join_seq and no cap.
	if _, err := e.svc.Quit(bg, "dave", g.GroupID); err != nil {
		t.Fatal(err)
	}
	e.notifier.advance(g.GroupID, 5)
	back, err := e.svc.Join(bg, "dave", g.GroupID)
	if err != nil {
		t.Fatal(err)
	}
	if back.JoinSeq != 19 || back.Status != "normal" {
		t.Fatalf("re-joined %+v", back)
	}
	if c := e.cursor(g.GroupID, "dave"); c.MinSeq != 19 || c.MaxSeq != 0 {
		t.Fatalf("re-joined bounds %+v: messages between quit and re-join must stay hidden", c)
	}

	// invite_only refuses joins; invitations still work.
	policy := group.PolicyInviteOnly
	if _, err := e.svc.Update(bg, "alice", group.UpdateRequest{GroupID: g.GroupID, JoinPolicy: &policy}); err != nil {
		t.Fatal(err)
	}
	_, err = e.svc.Join(bg, "erin", g.GroupID)
	wantReason(t, err, wire.ReasonJoinNotAllowed)
	if _, _, err := e.members.Bounds(bg, g.GroupID, "erin"); err == nil {
		t.Fatal("a refused joiner got bounds")
	}

	if _, err := e.svc.Dismiss(bg, "alice", g.GroupID); err != nil {
		t.Fatal(err)
	}
	_, err = e.svc.Join(bg, "erin", g.GroupID)
	wantReason(t, err, wire.ReasonGroupDismissed)
}

func TestInviteRules(t *testing.T) {
	t.Parallel()
	for _, perm := range []string{configs.InviteByMembers, configs.InviteByAdmins} {
		t.Run(perm, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, func(c *configs.Config) { c.Group.InvitePermission = perm; c.Group.MaxIDsPerRequest = 4 })
			e.addUsers("alice", "bob", "carol", "dave", "erin", "fred", "outsider")
			g := e.create("alice", "bob", "carol")
			must(e.svc.SetRole(bg, "alice", group.SetRoleRequest{GroupID: g.GroupID, UserID: "carol", RoleLevel: 60}))(t)

			// An ordinary member invites under "members" only.
			res, err := e.svc.Invite(bg, "bob", group.UsersRequest{GroupID: g.GroupID, UserIDs: []string{"dave"}})
			if perm == configs.InviteByAdmins {
				wantReason(t, err, wire.ReasonForbidden)
				res, err = e.svc.Invite(bg, "carol", group.UsersRequest{GroupID: g.GroupID, UserIDs: []string{"dave"}})
			}
			if err != nil || len(res.Invited) != 1 || res.Invited[0].UserID != "dave" {
				t.Fatalf("invite dave: %+v %v", res, err)
			}
			n, body := e.notifier.last(t)
			if n.MsgType != group.NotifyMemberInvited || !slices.Equal(body.UserIDs, []string{"dave"}) ||
				res.Invited[0].JoinSeq != n.Seq || res.Invited[0].InviterUserID != n.SenderID {
				t.Fatalf("invitation %+v %+v, invited %+v", n, body, res.Invited[0])
			}

			// Members already in are skipped, not errors; repeats collapse.
			before := e.notifier.count()
			res, err = e.svc.Invite(bg, "alice", group.UsersRequest{GroupID: g.GroupID, UserIDs: []string{"bob", "dave", "bob"}})
			if err != nil || len(res.Invited) != 0 || !slices.Equal(res.Skipped, []string{"bob", "dave"}) || e.notifier.count() != before {
				t.Fatalf("inviting members: %+v %v", res, err)
			}
			res, err = e.svc.Invite(bg, "alice", group.UsersRequest{GroupID: g.GroupID, UserIDs: []string{"bob", "erin"}})
			if err != nil || len(res.Invited) != 1 || res.Invited[0].UserID != "erin" || !slices.Equal(res.Skipped, []string{"bob"}) {
				t.Fatalf("mixed invite: %+v %v", res, err)
			}

			for _, tc := range []struct {
				name, caller string
				users        []string
				reason       wire.Reason
			}{
				{"unregistered invitee", "alice", []string{"fred", "nobody"}, wire.ReasonUserNotFound},
				{"inviter never joined", "outsider", []string{"fred"}, wire.ReasonNotGroupMember},
				{"too many at once", "alice", []string{"u1", "u2", "u3", "u4", "u5"}, wire.ReasonBadRequest},
				{"unknown group", "alice", []string{"fred"}, wire.ReasonGroupNotFound},
			} {
				t.Run(tc.name, func(t *testing.T) {
					gid := g.GroupID
					if tc.name == "unknown group" {
						gid = "nope"
					}
					_, err := e.svc.Invite(bg, tc.caller, group.UsersRequest{GroupID: gid, UserIDs: tc.users})
					wantReason(t, err, tc.reason)
				})
			}
			if m, err := e.repo.Member(bg, g.GroupID, "fred"); err == nil {
				t.Fatalf("a refused invitation added fred: %+v", m)
			}

			// A member who quit cannot invite; a kicked user can be invited back.
			must(e.svc.Quit(bg, "dave", g.GroupID))(t)
			_, err = e.svc.Invite(bg, "dave", group.UsersRequest{GroupID: g.GroupID, UserIDs: []string{"fred"}})
			wantReason(t, err, wire.ReasonMemberNotActive)
			must(e.svc.Kick(bg, "alice", group.UsersRequest{GroupID: g.GroupID, UserIDs: []string{"erin"}}))(t)
			e.notifier.advance(g.GroupID, 3)
			res = must(e.svc.Invite(bg, "alice", group.UsersRequest{GroupID: g.GroupID, UserIDs: []string{"erin"}}))(t)
			n, _ = e.notifier.last(t)
			if len(res.Invited) != 1 || res.Invited[0].JoinSeq != n.Seq || res.Invited[0].Status != "normal" {
				t.Fatalf("kicked user invited back: %+v", res)
			}
			if c := e.cursor(g.GroupID, "erin"); c.MinSeq != n.Seq || c.MaxSeq != 0 {
				t.Fatalf("erin's bounds after coming back: %+v", c)
			}
		})
	}
}

func TestQuitRules(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.addUsers("alice", "bob", "carol", "outsider")
	g := e.create("alice", "bob", "carol")

	_, err := e.svc.Quit(bg, "alice", g.GroupID)
	wantReason(t, err, wire.ReasonOwnerCannotQuit)
	_, err = e.svc.Quit(bg, "outsider", g.GroupID)
	wantReason(t, err, wire.ReasonNotGroupMember)
	_, err = e.svc.Quit(bg, "bob", "nope")
	wantReason(t, err, wire.ReasonGroupNotFound)

	e.notifier.advance(g.GroupID, 7)
	left, err := e.svc.Quit(bg, "bob", g.GroupID)
	if err != nil {
		t.Fatal(err)
	}
	n, body := e.notifier.last(t)
	if n.MsgType != group.NotifyMemberQuit || n.SenderID != "bob" || !slices.Equal(body.UserIDs, []string{"bob"}) || left.Status != "left" {
		t.Fatalf("quit: %+v, notification %+v %+v", left, n, body)
	}
	if c := e.cursor(g.GroupID, "bob"); c.MaxSeq != n.Seq || c.MinSeq != 1 {
		t.Fatalf("bob's cap %+v, want max_seq = quit notification seq %d", c, n.Seq)
	}
	if lo, hi, err := e.members.Bounds(bg, g.GroupID, "bob"); err != nil || lo != 1 || hi != n.Seq {
		t.Fatalf("Bounds(bob) = %d, %d, %v", lo, hi, err)
	}
	wantReason(t, e.members.CheckSend(bg, g.GroupID, "bob"), wire.ReasonMemberNotActive)
	_, err = e.svc.Quit(bg, "bob", g.GroupID)
	wantReason(t, err, wire.ReasonMemberNotActive)

	// After a transfer the old owner may quit.
	must(e.svc.Transfer(bg, "alice", group.TransferRequest{GroupID: g.GroupID, NewOwnerID: "carol"}))(t)
	if _, err := e.svc.Quit(bg, "alice", g.GroupID); err != nil {
		t.Fatalf("old owner quits after transfer: %v", err)
	}
}

func TestKickRules(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.addUsers("owner", "adm1", "adm2", "m1", "m2", "m3", "outsider")
	g := e.create("owner", "adm1", "adm2", "m1", "m2", "m3")
	for _, a := range []string{"adm1", "adm2"} {
		must(e.svc.SetRole(bg, "owner", group.SetRoleRequest{GroupID: g.GroupID, UserID: a, RoleLevel: 60}))(t)
	}
	before := e.notifier.count()
	for _, tc := range []struct {
		name, caller string
		users        []string
		reason       wire.Reason
	}{
		{"a member cannot kick", "m1", []string{"m2"}, wire.ReasonForbidden},
		{"an admin cannot kick an admin", "adm1", []string{"m2", "adm2"}, wire.ReasonForbidden},
		{"an admin cannot kick the owner", "adm1", []string{"owner"}, wire.ReasonForbidden},
		{"nobody kicks themself", "owner", []string{"owner"}, wire.ReasonBadRequest},
		{"an outsider cannot kick", "outsider", []string{"m1"}, wire.ReasonNotGroupMember},
		{"unknown group", "owner", []string{"m1"}, wire.ReasonGroupNotFound},
	} {
		t.Run(tc.name, func(t *testing.T) {
			gid := g.GroupID
			if tc.name == "unknown group" {
				gid = "nope"
			}
			_, err := e.svc.Kick(bg, tc.caller, group.UsersRequest{GroupID: gid, UserIDs: tc.users})
			wantReason(t, err, tc.reason)
		})
	}
	if e.notifier.count() != before || e.member(g.GroupID, "m2").Status != domain.MemberNormal {
		t.Fatal("a refused kick changed something")
	}

	// An admin kicks members; non-members are skipped.
	e.notifier.advance(g.GroupID, 4)
	res, err := e.svc.Kick(bg, "adm1", group.UsersRequest{GroupID: g.GroupID, UserIDs: []string{"m1", "outsider", "m2", "m1"}})
	if err != nil || !slices.Equal(res.Kicked, []string{"m1", "m2"}) || !slices.Equal(res.Skipped, []string{"outsider"}) {
		t.Fatalf("kick: %+v %v", res, err)
	}
	n, body := e.notifier.last(t)
	if n.MsgType != group.NotifyMemberKicked || n.SenderID != "adm1" || !slices.Equal(body.UserIDs, []string{"m1", "m2"}) {
		t.Fatalf("kick notification %+v %+v", n, body)
	}
	for _, u := range []string{"m1", "m2"} {
		if m := e.member(g.GroupID, u); m.Status != domain.MemberKicked {
			t.Errorf("%s: %+v", u, m)
		}
		if c := e.cursor(g.GroupID, u); c.MaxSeq != n.Seq {
			t.Errorf("%s's cap %+v, want %d", u, c, n.Seq)
		}
		wantReason(t, e.members.CheckSend(bg, g.GroupID, u), wire.ReasonMemberNotActive)
	}
	// Kicking someone already kicked is a skip.
	res, err = e.svc.Kick(bg, "adm1", group.UsersRequest{GroupID: g.GroupID, UserIDs: []string{"m1"}})
	if err != nil || len(res.Kicked) != 0 || !slices.Equal(res.Skipped, []string{"m1"}) {
		t.Fatalf("kick again: %+v %v", res, err)
	}
	// The owner kicks an admin.
	res, err = e.svc.Kick(bg, "owner", group.UsersRequest{GroupID: g.GroupID, UserIDs: []string{"adm2"}})
	if err != nil || !slices.Equal(res.Kicked, []string{"adm2"}) {
		t.Fatalf("owner kicks admin: %+v %v", res, err)
	}
}

func TestTransferRules(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.addUsers("alice", "bob", "carol", "dave", "registered")
	g := e.create("alice", "bob", "carol", "dave")
	must(e.svc.SetRole(bg, "alice", group.SetRoleRequest{GroupID: g.GroupID, UserID: "bob", RoleLevel: 60}))(t)
	must(e.svc.Quit(bg, "dave", g.GroupID))(t)
	for _, tc := range []struct {
		name, caller, to string
		reason           wire.Reason
	}{
		{"an admin cannot transfer", "bob", "carol", wire.ReasonForbidden},
		{"to an unregistered user", "alice", "ghost", wire.ReasonUserNotFound},
		{"to a non-member", "alice", "registered", wire.ReasonNotGroupMember},
		{"to a member who quit", "alice", "dave", wire.ReasonMemberNotActive},
		{"to oneself", "alice", "alice", wire.ReasonBadRequest},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := e.svc.Transfer(bg, tc.caller, group.TransferRequest{GroupID: g.GroupID, NewOwnerID: tc.to})
			wantReason(t, err, tc.reason)
		})
	}
	got, err := e.svc.Transfer(bg, "alice", group.TransferRequest{GroupID: g.GroupID, NewOwnerID: "carol"})
	if err != nil || got.OwnerUserID != "carol" || got.CreatorUserID != "alice" {
		t.Fatalf("transfer: %+v %v", got, err)
	}
	if e.member(g.GroupID, "alice").RoleLevel != domain.RoleMember || e.member(g.GroupID, "carol").RoleLevel != domain.RoleOwner {
		t.Fatal("roles not swapped")
	}
	n, body := e.notifier.last(t)
	if n.MsgType != group.NotifyOwnerTransferred || body.OldOwnerID != "alice" || body.NewOwnerID != "carol" || body.Group.OwnerUserID != "carol" {
		t.Fatalf("transfer notification %+v %+v", n, body)
	}
	_, err = e.svc.Transfer(bg, "alice", group.TransferRequest{GroupID: g.GroupID, NewOwnerID: "bob"})
	wantReason(t, err, wire.ReasonForbidden)
}

func TestSetRoleRules(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.addUsers("alice", "bob", "carol", "registered")
	g := e.create("alice", "bob", "carol")
	for _, tc := range []struct {
		name, caller, user string
		reason             wire.Reason
	}{
		{"only the owner sets roles", "bob", "carol", wire.ReasonForbidden},
		{"the owner's role moves only by transfer", "alice", "alice", wire.ReasonForbidden},
		{"unregistered target", "alice", "ghost", wire.ReasonUserNotFound},
		{"non-member target", "alice", "registered", wire.ReasonNotGroupMember},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := e.svc.SetRole(bg, tc.caller, group.SetRoleRequest{GroupID: g.GroupID, UserID: tc.user, RoleLevel: 60})
			wantReason(t, err, tc.reason)
		})
	}
	for _, bad := range []int{100, 0, 59, 21} {
		r := group.SetRoleRequest{GroupID: g.GroupID, UserID: "bob", RoleLevel: bad}
		wantReason(t, r.Validate(), wire.ReasonBadRequest)
	}
	m, err := e.svc.SetRole(bg, "alice", group.SetRoleRequest{GroupID: g.GroupID, UserID: "bob", RoleLevel: 60})
	if err != nil || m.RoleLevel != 60 {
		t.Fatalf("promote: %+v %v", m, err)
	}
	n, body := e.notifier.last(t)
	if n.MsgType != group.NotifyRoleChanged || body.RoleLevel != 60 || !slices.Equal(body.UserIDs, []string{"bob"}) {
		t.Fatalf("role notification %+v %+v", n, body)
	}
	before := e.notifier.count()
	if m, err := e.svc.SetRole(bg, "alice", group.SetRoleRequest{GroupID: g.GroupID, UserID: "bob", RoleLevel: 60}); err != nil || m.RoleLevel != 60 || e.notifier.count() != before {
		t.Fatalf("same role again: %+v %v (%d notifications)", m, err, e.notifier.count()-before)
	}
	// An admin may now kick members and update the group.
	must(e.svc.Kick(bg, "bob", group.UsersRequest{GroupID: g.GroupID, UserIDs: []string{"carol"}}))(t)
	m = must(e.svc.SetRole(bg, "alice", group.SetRoleRequest{GroupID: g.GroupID, UserID: "bob", RoleLevel: 20}))(t)
	if m.RoleLevel != 20 {
		t.Fatalf("demote: %+v", m)
	}
	_, err = e.svc.SetRole(bg, "alice", group.SetRoleRequest{GroupID: g.GroupID, UserID: "carol", RoleLevel: 60})
	wantReason(t, err, wire.ReasonMemberNotActive)
}

func TestDismissRules(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.addUsers("alice", "bob", "carol", "dave")
	g := e.create("alice", "bob", "carol")
	must(e.svc.SetRole(bg, "alice", group.SetRoleRequest{GroupID: g.GroupID, UserID: "bob", RoleLevel: 60}))(t)
	_, err := e.svc.Dismiss(bg, "bob", g.GroupID)
	wantReason(t, err, wire.ReasonForbidden)
	_, err = e.svc.Dismiss(bg, "dave", g.GroupID)
	wantReason(t, err, wire.ReasonNotGroupMember)

	got, err := e.svc.Dismiss(bg, "alice", g.GroupID)
	if err != nil || got.Status != "dismissed" {
		t.Fatalf("dismiss: %+v %v", got, err)
	}
	n, body := e.notifier.last(t)
	if n.MsgType != group.NotifyGroupDismissed || body.Group.Status != "dismissed" {
		t.Fatalf("dismiss notification %+v %+v", n, body)
	}
	// Sends are refused; members keep read access; every change is refused.
	wantReason(t, e.members.CheckSend(bg, g.GroupID, "carol"), wire.ReasonGroupDismissed)
	wantReason(t, e.process().CheckSend(bg, g.GroupID, "alice"), wire.ReasonGroupDismissed)
	if lo, hi, err := e.members.Bounds(bg, g.GroupID, "carol"); err != nil || lo != 1 || hi != 0 {
		t.Fatalf("carol's read access after dismissal: %d %d %v", lo, hi, err)
	}
	if page, err := e.svc.Members(bg, "carol", g.GroupID, 0, 0); err != nil || page.Total != 3 {
		t.Fatalf("members of a dismissed group: %+v %v", page, err)
	}
	for name, call := range map[string]func() error{
		"dismiss": func() error { _, err := e.svc.Dismiss(bg, "alice", g.GroupID); return err },
		"invite": func() error {
			_, err := e.svc.Invite(bg, "alice", group.UsersRequest{GroupID: g.GroupID, UserIDs: []string{"dave"}})
			return err
		},
		"kick": func() error {
			_, err := e.svc.Kick(bg, "alice", group.UsersRequest{GroupID: g.GroupID, UserIDs: []string{"carol"}})
			return err
		},
		"quit": func() error { _, err := e.svc.Quit(bg, "carol", g.GroupID); return err },
		"update": func() error {
			name := "x"
			_, err := e.svc.Update(bg, "alice", group.UpdateRequest{GroupID: g.GroupID, Name: &name})
			return err
		},
	} {
		t.Run(name, func(t *testing.T) { wantReason(t, call(), wire.ReasonGroupDismissed) })
	}
	if list := must(e.svc.List(bg, "carol"))(t); len(list.Groups) != 1 || list.Groups[0].Status != "dismissed" {
		t.Fatalf("carol's list %+v", list)
	}
}

func TestUpdateRules(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.addUsers("alice", "bob", "carol")
	g := e.create("alice", "bob", "carol")
	must(e.svc.SetRole(bg, "alice", group.SetRoleRequest{GroupID: g.GroupID, UserID: "bob", RoleLevel: 60}))(t)
	name, intro, same := "renamed", "about us", "team"
	_, err := e.svc.Update(bg, "carol", group.UpdateRequest{GroupID: g.GroupID, Name: &name})
	wantReason(t, err, wire.ReasonForbidden)

	got, err := e.svc.Update(bg, "bob", group.UpdateRequest{GroupID: g.GroupID, Name: &name, Introduction: &intro})
	if err != nil || got.Name != "renamed" || got.Introduction != "about us" || got.MemberCount != 3 {
		t.Fatalf("update: %+v %v", got, err)
	}
	n, body := e.notifier.last(t)
	if n.MsgType != group.NotifyGroupUpdated || !slices.Equal(body.Changed, []string{"name", "introduction"}) || body.Group.Name != "renamed" {
		t.Fatalf("update notification %+v %+v", n, body)
	}
	before := e.notifier.count()
	if got, err := e.svc.Update(bg, "alice", group.UpdateRequest{GroupID: g.GroupID, Name: &name}); err != nil || got.Name != "renamed" || e.notifier.count() != before {
		t.Fatalf("unchanged update: %+v %v", got, err)
	}
	if info := must(e.svc.Info(bg, g.GroupID))(t); info.Name != "renamed" {
		t.Fatalf("info after update (cache invalidated?): %+v", info)
	}
	for _, r := range []group.UpdateRequest{
		{GroupID: g.GroupID},
		{GroupID: g.GroupID, Name: new(string)},
		{GroupID: g.GroupID, JoinPolicy: &same},
		{Name: &name},
	} {
		wantReason(t, r.Validate(), wire.ReasonBadRequest)
	}
}

func TestQueriesRules(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.addUsers("alice", "bob", "carol", "dave", "outsider")
	g := e.create("alice", "bob", "carol", "dave")
	must(e.svc.SetRole(bg, "alice", group.SetRoleRequest{GroupID: g.GroupID, UserID: "carol", RoleLevel: 60}))(t)
	must(e.svc.Quit(bg, "dave", g.GroupID))(t)

	info, err := e.svc.Info(bg, g.GroupID)
	if err != nil || info.MemberCount != 3 || info.GroupID != g.GroupID {
		t.Fatalf("info %+v %v", info, err)
	}
	_, err = e.svc.Info(bg, "nope")
	wantReason(t, err, wire.ReasonGroupNotFound)

	page, err := e.svc.Members(bg, "bob", g.GroupID, 0, 2)
	if err != nil || page.Total != 3 || len(page.Members) != 2 || page.Members[0].UserID != "alice" || page.Members[1].UserID != "carol" {
		t.Fatalf("members page %+v %v", page, err)
	}
	_, err = e.svc.Members(bg, "outsider", g.GroupID, 0, 0)
	wantReason(t, err, wire.ReasonNotGroupMember)
	_, err = e.svc.Members(bg, "dave", g.GroupID, 0, 0)
	wantReason(t, err, wire.ReasonMemberNotActive)
	_, err = e.svc.Members(bg, "bob", g.GroupID, 0, group.MaxMembersPage+1)
	wantReason(t, err, wire.ReasonBadRequest)

	other := e.create("bob", "carol", "outsider")
	list := must(e.svc.List(bg, "carol"))(t)
	if len(list.Groups) != 2 || list.Groups[0].GroupID != g.GroupID || list.Groups[1].GroupID != other.GroupID || list.Groups[1].MemberCount != 3 {
		t.Fatalf("carol's groups %+v", list)
	}
	if list := must(e.svc.List(bg, "dave"))(t); len(list.Groups) != 0 {
		t.Fatalf("dave quit but lists %+v", list)
	}
}

// TestChangeUndoneWhenNotificationFails: a change is made and announced,
// or not made at all.
func TestChangeUndoneWhenNotificationFails(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.addUsers("alice", "bob", "carol", "dave")
	g := e.create("alice", "bob", "carol")
	other := e.process()
	if err := other.CheckSend(bg, g.GroupID, "bob"); err != nil {
		t.Fatal(err)
	}
	e.notifier.setFail(errPipelineDown)
	_, err := e.svc.Kick(bg, "alice", group.UsersRequest{GroupID: g.GroupID, UserIDs: []string{"bob"}})
	if err == nil {
		t.Fatal("kick succeeded without its notification")
	}
	if m := e.member(g.GroupID, "bob"); m.Status != domain.MemberNormal || m.RoleLevel != domain.RoleMember {
		t.Fatalf("bob after an unannounced kick: %+v", m)
	}
	if c := e.cursor(g.GroupID, "bob"); c.MaxSeq != 0 {
		t.Fatalf("bob's cap after an unannounced kick: %+v", c)
	}
	if err := other.CheckSend(bg, g.GroupID, "bob"); err != nil {
		t.Fatalf("bob refused after the kick was undone: %v", err)
	}
	_, err = e.svc.Dismiss(bg, "alice", g.GroupID)
	if err == nil || must(e.repo.Get(bg, g.GroupID))(t).Status != domain.GroupNormal {
		t.Fatalf("dismiss without notification: %v", err)
	}
	_, err = e.svc.Join(bg, "dave", g.GroupID)
	if err == nil {
		t.Fatal("join succeeded without its notification")
	}
	if _, err := e.repo.Member(bg, g.GroupID, "dave"); err == nil {
		t.Fatal("dave was written without a join notification")
	}
	e.notifier.setFail(nil)
	if _, err := e.svc.Join(bg, "dave", g.GroupID); err != nil {
		t.Fatal(err)
	}
}
