package group_test

import (
	"slices"
	"testing"

	"github.com/nexo-im/nexo/configs"
	"github.com/nexo-im/nexo/gateway/wire"
	"github.com/nexo-im/nexo/services/group"
)

func yes() *bool { t := true; return &t }
func no() *bool  { f := false; return &f }

// TestApprovalJoin: on an approval group /group/join
// files an application (no member row, no notification) that only the
// owner and admins list and answer; accepting adds the applicant as an
// invitation does, rejecting leaves it out and lets it apply again; a
// kicked user cannot apply.
func TestApprovalJoin(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.addUsers("alice", "adm", "bob", "dave", "erin", "fred", "mallory")
	g := must(e.svc.Create(bg, "alice", group.CreateRequest{Name: "club", MemberIDs: []string{"adm", "bob", "mallory"}, JoinPolicy: group.PolicyApproval}))(t)
	if g.JoinPolicy != "approval" {
		t.Fatalf("join_policy %q", g.JoinPolicy)
	}
	must(e.svc.SetRole(bg, "alice", group.SetRoleRequest{GroupID: g.GroupID, UserID: "adm", RoleLevel: 60}))(t)
	must(e.svc.Kick(bg, "alice", group.UsersRequest{GroupID: g.GroupID, UserIDs: []string{"mallory"}}))(t)

	before := e.notifier.count()
	pending, err := e.svc.JoinWithMessage(bg, "dave", g.GroupID, "let me in")
	if err != nil || pending.Status != group.StatusPending || pending.UserID != "dave" || pending.JoinSeq != 0 || pending.RoleLevel != 0 {
		t.Fatalf("join of an approval group: %+v %v", pending, err)
	}
	if again, err := e.svc.Join(bg, "dave", g.GroupID); err != nil || again.Status != group.StatusPending {
		t.Fatalf("second join: %+v %v", again, err)
	}
	must(e.svc.Join(bg, "erin", g.GroupID))(t)
	must(e.svc.Join(bg, "fred", g.GroupID))(t)
	if e.notifier.count() != before {
		t.Fatal("an application was announced in the group")
	}
	if _, err := e.repo.Member(bg, g.GroupID, "dave"); err == nil {
		t.Fatal("an applicant became a member")
	}
	wantReason(t, e.members.CheckSend(bg, g.GroupID, "dave"), wire.ReasonNotGroupMember)
	_, err = e.svc.Join(bg, "mallory", g.GroupID)
	wantReason(t, err, wire.ReasonJoinNotAllowed)

	// Only the owner and admins list applications, a page at a time.
	_, err = e.svc.Applications(bg, "bob", g.GroupID, "", 0)
	wantReason(t, err, wire.ReasonForbidden)
	_, err = e.svc.Applications(bg, "dave", g.GroupID, "", 0)
	wantReason(t, err, wire.ReasonNotGroupMember)
	_, err = e.svc.Applications(bg, "adm", g.GroupID, "x", 0)
	wantReason(t, err, wire.ReasonBadRequest)
	_, err = e.svc.Applications(bg, "adm", g.GroupID, "", group.MaxListPage+1)
	wantReason(t, err, wire.ReasonBadRequest)
	first := must(e.svc.Applications(bg, "adm", g.GroupID, "", 2))(t)
	if len(first.Applications) != 2 || first.Applications[0].UserID != "dave" || first.Applications[0].ReqMsg != "let me in" ||
		first.Applications[0].Status != "pending" || first.Applications[1].UserID != "erin" || first.NextCursor == "" {
		t.Fatalf("first page %+v", first)
	}
	last := must(e.svc.Applications(bg, "alice", g.GroupID, first.NextCursor, 2))(t)
	if len(last.Applications) != 1 || last.Applications[0].UserID != "fred" || last.NextCursor != "" {
		t.Fatalf("last page %+v", last)
	}

	// Answering: admins only, a pending application only.
	_, err = e.svc.RespondApplication(bg, "bob", group.RespondRequest{GroupID: g.GroupID, UserID: "dave", Accept: yes()})
	wantReason(t, err, wire.ReasonForbidden)
	_, err = e.svc.RespondApplication(bg, "adm", group.RespondRequest{GroupID: g.GroupID, UserID: "bob", Accept: yes()})
	wantReason(t, err, wire.ReasonNotFound)

	e.notifier.advance(g.GroupID, 7)
	res, err := e.svc.RespondApplication(bg, "adm", group.RespondRequest{GroupID: g.GroupID, UserID: "dave", Accept: yes()})
	if err != nil {
		t.Fatal(err)
	}
	n, body := e.notifier.last(t)
	if n.MsgType != group.NotifyMemberJoined || n.SenderID != "adm" || !slices.Equal(body.UserIDs, []string{"dave"}) {
		t.Fatalf("acceptance notification %+v %+v", n, body)
	}
	if res.Member == nil || res.Member.Status != "normal" || res.Member.JoinSeq != n.Seq || res.Member.InviterUserID != "adm" ||
		res.Application.Status != "accepted" || res.Application.HandlerUserID != "adm" || res.Application.HandledAt == 0 {
		t.Fatalf("accepted %+v %+v (notification seq %d)", res.Application, res.Member, n.Seq)
	}
	if c := e.cursor(g.GroupID, "dave"); c.MinSeq != n.Seq {
		t.Fatalf("dave's bounds %+v, want min_seq %d", c, n.Seq)
	}
	if err := e.members.CheckSend(bg, g.GroupID, "dave"); err != nil {
		t.Fatalf("an accepted applicant cannot send: %v", err)
	}
	_, err = e.svc.RespondApplication(bg, "adm", group.RespondRequest{GroupID: g.GroupID, UserID: "dave", Accept: yes()})
	wantReason(t, err, wire.ReasonNotFound)

	before = e.notifier.count()
	res, err = e.svc.RespondApplication(bg, "alice", group.RespondRequest{GroupID: g.GroupID, UserID: "erin", Accept: no()})
	if err != nil || res.Member != nil || res.Application.Status != "rejected" || e.notifier.count() != before {
		t.Fatalf("rejected: %+v %v, %d notifications", res, err, e.notifier.count()-before)
	}
	if _, err := e.repo.Member(bg, g.GroupID, "erin"); err == nil {
		t.Fatal("a rejected applicant became a member")
	}
	left := must(e.svc.Applications(bg, "alice", g.GroupID, "", 0))(t)
	if len(left.Applications) != 1 || left.Applications[0].UserID != "fred" {
		t.Fatalf("pending after answers %+v", left)
	}
	// A rejected applicant may apply again; a member joining again is a member.
	if p := must(e.svc.Join(bg, "erin", g.GroupID))(t); p.Status != group.StatusPending {
		t.Fatalf("erin re-applies: %+v", p)
	}
	if m := must(e.svc.Join(bg, "dave", g.GroupID))(t); m.Status != "normal" {
		t.Fatalf("member's join: %+v", m)
	}
	if err := (&group.RespondRequest{GroupID: g.GroupID, UserID: "erin"}).Validate(); err == nil {
		t.Fatal("a response without accept was valid")
	}
}

// TestApprovalRespectsMaxMembers: accepting goes through the invitation
// path, so group.max_members refuses it and the application stays pending.
func TestApprovalRespectsMaxMembers(t *testing.T) {
	t.Parallel()
	e := newEnv(t, func(c *configs.Config) { c.Group.MaxMembers = 3 })
	e.addUsers("alice", "bob", "carol", "dave")
	g := must(e.svc.Create(bg, "alice", group.CreateRequest{Name: "full", MemberIDs: []string{"bob", "carol"}, JoinPolicy: group.PolicyApproval}))(t)
	must(e.svc.Join(bg, "dave", g.GroupID))(t)
	_, err := e.svc.RespondApplication(bg, "alice", group.RespondRequest{GroupID: g.GroupID, UserID: "dave", Accept: yes()})
	wantReason(t, err, wire.ReasonBadRequest)
	if p := must(e.svc.Applications(bg, "alice", g.GroupID, "", 0))(t); len(p.Applications) != 1 {
		t.Fatalf("refused acceptance dropped the application: %+v", p)
	}
}

// TestGroupInvitePermission: a group's invite_permission
// (set at creation or by owner/admins through /group/update) decides who
// may add others, over the server's group.invite_permission.
func TestGroupInvitePermission(t *testing.T) {
	t.Parallel()
	e := newEnv(t) // group.invite_permission: members
	e.addUsers("alice", "adm", "bob", "carol", "dave", "erin")
	g := must(e.svc.Create(bg, "alice", group.CreateRequest{Name: "t", MemberIDs: []string{"adm", "bob"}, InvitePermission: "admins"}))(t)
	if g.InvitePermission != "admins" {
		t.Fatalf("invite_permission %q", g.InvitePermission)
	}
	must(e.svc.SetRole(bg, "alice", group.SetRoleRequest{GroupID: g.GroupID, UserID: "adm", RoleLevel: 60}))(t)
	_, err := e.svc.Invite(bg, "bob", group.UsersRequest{GroupID: g.GroupID, UserIDs: []string{"carol"}})
	wantReason(t, err, wire.ReasonForbidden)
	must(e.svc.Invite(bg, "adm", group.UsersRequest{GroupID: g.GroupID, UserIDs: []string{"carol"}}))(t)

	members, admins := "members", "admins"
	_, err = e.svc.Update(bg, "bob", group.UpdateRequest{GroupID: g.GroupID, InvitePermission: &members})
	wantReason(t, err, wire.ReasonForbidden)
	up := must(e.svc.Update(bg, "adm", group.UpdateRequest{GroupID: g.GroupID, InvitePermission: &members}))(t)
	if up.InvitePermission != "members" {
		t.Fatalf("updated %+v", up)
	}
	if _, body := e.notifier.last(t); !slices.Equal(body.Changed, []string{"invite_permission"}) {
		t.Fatalf("update notification changed %v", body.Changed)
	}
	must(e.svc.Invite(bg, "bob", group.UsersRequest{GroupID: g.GroupID, UserIDs: []string{"dave"}}))(t)
	if info := must(e.svc.Info(bg, g.GroupID))(t); info.InvitePermission != "members" {
		t.Fatalf("info after update %+v", info)
	}

	// A group without its own setting follows the server's, and shows it.
	plain := e.create("alice", "bob", "carol")
	if plain.InvitePermission != "members" {
		t.Fatalf("default invite_permission %q", plain.InvitePermission)
	}
	strict := newEnv(t, func(c *configs.Config) { c.Group.InvitePermission = configs.InviteByAdmins })
	strict.addUsers("alice", "bob", "carol", "dave")
	sg := strict.create("alice", "bob", "carol")
	_, err = strict.svc.Invite(bg, "bob", group.UsersRequest{GroupID: sg.GroupID, UserIDs: []string{"dave"}})
	wantReason(t, err, wire.ReasonForbidden)
	// Setting what already applies is no change.
	before := strict.notifier.count()
	if same := must(strict.svc.Update(bg, "alice", group.UpdateRequest{GroupID: sg.GroupID, InvitePermission: &admins}))(t); same.InvitePermission != "admins" || strict.notifier.count() != before {
		t.Fatalf("no-op update %+v, %d notifications", same, strict.notifier.count()-before)
	}
	must(strict.svc.Update(bg, "alice", group.UpdateRequest{GroupID: sg.GroupID, InvitePermission: &members}))(t)
	must(strict.svc.Invite(bg, "bob", group.UsersRequest{GroupID: sg.GroupID, UserIDs: []string{"dave"}}))(t)

	bad := "everyone"
	wantReason(t, (&group.UpdateRequest{GroupID: g.GroupID, InvitePermission: &bad}).Validate(), wire.ReasonBadRequest)
	wantReason(t, (&group.CreateRequest{Name: "x", InvitePermission: bad}).Validate(), wire.ReasonBadRequest)
}

// TestListPages: /group/list pages with cursor/limit,
// oldest first, next_cursor "" after the last page.
func TestListPages(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.addUsers("alice", "bob", "carol")
	var want []string
	for range 5 {
		want = append(want, e.create("alice", "bob", "carol").GroupID)
	}
	var got []string
	cursor := ""
	for pages := 0; ; pages++ {
		if pages > 3 {
			t.Fatalf("more than 3 pages of 2 for 5 groups: %v", got)
		}
		p := must(e.svc.List(bg, "bob", cursor, 2))(t)
		for _, g := range p.Groups {
			got = append(got, g.GroupID)
		}
		if p.NextCursor == "" {
			break
		}
		if len(p.Groups) != 2 {
			t.Fatalf("a page of %d with a next cursor", len(p.Groups))
		}
		cursor = p.NextCursor
	}
	if !slices.Equal(got, want) {
		t.Fatalf("paged %v, want %v", got, want)
	}
	if all := must(e.svc.List(bg, "bob", "", 0))(t); len(all.Groups) != 5 || all.NextCursor != "" {
		t.Fatalf("default page %+v", all)
	}
	for _, c := range []string{"x", "12", ":abc", "12:" + "bad id"} {
		_, err := e.svc.List(bg, "bob", c, 0)
		wantReason(t, err, wire.ReasonBadRequest)
	}
	for _, l := range []int{-1, group.MaxListPage + 1} {
		_, err := e.svc.List(bg, "bob", "", l)
		wantReason(t, err, wire.ReasonBadRequest)
	}
}
