package group_test

import (
	"context"
	"slices"
	"testing"

	"github.com/nexo-im/nexo/configs"
	"github.com/nexo-im/nexo/domain"
	"github.com/nexo-im/nexo/gateway/wire"
	"github.com/nexo-im/nexo/services/group"
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
		g.JoinPolicy != "invite_only" || g.GroupType != 2 || g.Introduction != "hi" || g.CreatedAt == 0 {
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

// TestJoinPolicyDefaultsAndKicks: a group is invite-only
// unless created open; a group ID alone lets nobody in; a kicked user
// cannot rejoin even an open group without an invitation; a non-public
// group's info is for its members (former ones included).
func TestJoinPolicyDefaultsAndKicks(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.addUsers("alice", "bob", "carol", "mallory", "erin")
	closed := must(e.svc.Create(bg, "alice", group.CreateRequest{Name: "closed", MemberIDs: []string{"bob", "carol"}}))(t)
	if closed.JoinPolicy != group.PolicyInviteOnly {
		t.Fatalf("default join_policy %q, want invite_only", closed.JoinPolicy)
	}
	_, err := e.svc.Join(bg, "mallory", closed.GroupID)
	wantReason(t, err, wire.ReasonJoinNotAllowed)
	_, err = e.svc.InfoFor(bg, "mallory", closed.GroupID)
	wantReason(t, err, wire.ReasonNotGroupMember)
	if info, err := e.svc.InfoFor(bg, "bob", closed.GroupID); err != nil || info.GroupID != closed.GroupID {
		t.Fatalf("member's info: %+v %v", info, err)
	}

	open := must(e.svc.Create(bg, "alice", group.CreateRequest{Name: "open", MemberIDs: []string{"bob", "carol"}, JoinPolicy: group.PolicyOpen}))(t)
	if _, err := e.svc.InfoFor(bg, "erin", open.GroupID); err != nil {
		t.Fatalf("an open group's info is public: %v", err)
	}
	must(e.svc.Join(bg, "mallory", open.GroupID))(t)
	must(e.svc.Kick(bg, "alice", group.UsersRequest{GroupID: open.GroupID, UserIDs: []string{"mallory"}}))(t)
	_, err = e.svc.Join(bg, "mallory", open.GroupID)
	wantReason(t, err, wire.ReasonJoinNotAllowed)
	// Former members still read the info of a closed group.
	must(e.svc.Kick(bg, "alice", group.UsersRequest{GroupID: closed.GroupID, UserIDs: []string{"carol"}}))(t)
	if _, err := e.svc.InfoFor(bg, "carol", closed.GroupID); err != nil {
		t.Fatalf("former member's info: %v", err)
	}
	// An invitation brings the kicked user back.
	must(e.svc.Invite(bg, "alice", group.UsersRequest{GroupID: open.GroupID, UserIDs: []string{"mallory"}}))(t)
	if err := e.members.CheckSend(bg, open.GroupID, "mallory"); err != nil {
		t.Fatalf("invited back: %v", err)
	}
	wantReason(t, (&group.CreateRequest{Name: "x", JoinPolicy: "public"}).Validate(), wire.ReasonBadRequest)
}

// TestMaxMembers: group.max_members bounds creation,
// invitations and joins; nothing is announced or written beyond it.
func TestMaxMembers(t *testing.T) {
	t.Parallel()
	e := newEnv(t, func(c *configs.Config) { c.Group.MaxMembers = 4 })
	e.addUsers("alice", "bob", "carol", "dave", "erin", "fred")
	_, err := e.svc.Create(bg, "alice", group.CreateRequest{Name: "x", MemberIDs: []string{"bob", "carol", "dave", "erin"}})
	wantReason(t, err, wire.ReasonBadRequest)
	g := e.create("alice", "bob", "carol")
	before := e.notifier.count()
	_, err = e.svc.Invite(bg, "alice", group.UsersRequest{GroupID: g.GroupID, UserIDs: []string{"dave", "erin"}})
	wantReason(t, err, wire.ReasonBadRequest)
	if e.notifier.count() != before {
		t.Fatal("a refused invitation was announced")
	}
	must(e.svc.Join(bg, "dave", g.GroupID))(t)
	_, err = e.svc.Join(bg, "erin", g.GroupID)
	wantReason(t, err, wire.ReasonBadRequest)
	if info := must(e.svc.Info(bg, g.GroupID))(t); info.MemberCount != 4 {
		t.Fatalf("member_count %d, want 4", info.MemberCount)
	}
}
