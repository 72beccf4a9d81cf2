package group_test

import (
	"slices"
	"testing"

	"github.com/nexo-im/nexo/domain"
	"github.com/nexo-im/nexo/gateway/wire"
	"github.com/nexo-im/nexo/services/group"
)

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
	if list := must(e.svc.List(bg, "carol", "", 0))(t); len(list.Groups) != 1 || list.Groups[0].Status != "dismissed" {
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
	list := must(e.svc.List(bg, "carol", "", 0))(t)
	if len(list.Groups) != 2 || list.Groups[0].GroupID != g.GroupID || list.Groups[1].GroupID != other.GroupID || list.Groups[1].MemberCount != 3 {
		t.Fatalf("carol's groups %+v", list)
	}
	if list := must(e.svc.List(bg, "dave", "", 0))(t); len(list.Groups) != 0 {
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
