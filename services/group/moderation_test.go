package group_test

import (
	"errors"
	"testing"

	"github.com/nexo-im/nexo/domain"
	"github.com/nexo-im/nexo/gateway/wire"
	"github.com/nexo-im/nexo/services/group"
)

// TestModerationRules: who may mute and ban whom; a mute ends on time 0
// and survives leaving; a former member is banned without a kick and a
// never-member not at all; a banned applicant is not admitted; banning and
// unbanning again change nothing; every change is one notification.
func TestModerationRules(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.addUsers("owner", "adm", "adm2", "bob", "carol", "dan", "stranger")
	g := e.create("owner", "adm", "adm2", "bob", "carol", "dan")
	for _, u := range []string{"adm", "adm2"} {
		must(e.svc.SetRole(bg, "owner", group.SetRoleRequest{GroupID: g.GroupID, UserID: u, RoleLevel: int(domain.RoleAdmin)}))(t)
	}
	mute := func(by, who string, secs int64) error {
		_, err := e.svc.MuteMember(bg, by, group.MuteMemberRequest{GroupID: g.GroupID, UserID: who, Seconds: secs})
		return err
	}
	wantReason(t, mute("bob", "carol", 60), wire.ReasonForbidden) // a plain member
	wantReason(t, mute("adm", "owner", 60), wire.ReasonForbidden) // the owner
	wantReason(t, mute("adm", "adm2", 60), wire.ReasonForbidden)  // an admin, by an admin
	wantReason(t, mute("adm", "stranger", 60), wire.ReasonNotGroupMember)
	if err := mute("owner", "adm2", 60); err != nil { // an admin, by the owner
		t.Fatal(err)
	}
	before := e.notifier.count()
	if err := mute("adm", "bob", 60); err != nil {
		t.Fatal(err)
	}
	if _, n := e.notifier.last(t); e.notifier.count() != before+1 || n.MuteUntil == 0 || n.UserIDs[0] != "bob" {
		t.Fatalf("member_muted notification: %+v", n)
	}
	wantReason(t, e.members.CheckSend(bg, g.GroupID, "bob"), wire.ReasonForbidden)
	must(e.svc.Quit(bg, "bob", g.GroupID))(t)
	must(e.svc.Join(bg, "bob", g.GroupID))(t)
	wantReason(t, e.members.CheckSend(bg, g.GroupID, "bob"), wire.ReasonForbidden)
	if err := mute("adm", "bob", 0); err != nil {
		t.Fatal(err)
	}
	if err := e.members.CheckSend(bg, g.GroupID, "bob"); err != nil {
		t.Fatalf("after the mute was lifted: %v", err)
	}

	// A group mute: members silent, admins and the owner not.
	_, err := e.svc.Mute(bg, "bob", group.MuteGroupRequest{GroupID: g.GroupID, Muted: true})
	wantReason(t, err, wire.ReasonForbidden)
	if gj := must(e.svc.Mute(bg, "adm", group.MuteGroupRequest{GroupID: g.GroupID, Muted: true}))(t); !gj.Muted {
		t.Fatalf("group after mute: %+v", gj)
	}
	n := e.notifier.count()
	must(e.svc.Mute(bg, "adm", group.MuteGroupRequest{GroupID: g.GroupID, Muted: true}))(t)
	if e.notifier.count() != n {
		t.Fatal("muting a muted group announced a change")
	}
	wantReason(t, e.members.CheckSend(bg, g.GroupID, "carol"), wire.ReasonForbidden)
	for _, u := range []string{"owner", "adm"} {
		if err := e.members.CheckSend(bg, g.GroupID, u); err != nil {
			t.Fatalf("%s in a muted group: %v", u, err)
		}
	}
	must(e.svc.Mute(bg, "owner", group.MuteGroupRequest{GroupID: g.GroupID, Muted: false}))(t)

	// Bans.
	ban := func(by, who string) (group.MemberJSON, error) {
		return e.svc.Ban(bg, by, group.MemberRequest{GroupID: g.GroupID, UserID: who})
	}
	_, err = ban("adm", "adm2")
	wantReason(t, err, wire.ReasonForbidden)
	_, err = ban("adm", "stranger")
	wantReason(t, err, wire.ReasonNotGroupMember)
	if m := must(ban("adm", "carol"))(t); m.Status != "banned" {
		t.Fatalf("banned member: %+v", m)
	}
	wantReason(t, e.members.CheckSend(bg, g.GroupID, "carol"), wire.ReasonMemberNotActive)
	n = e.notifier.count()
	must(ban("adm", "carol"))(t)
	if e.notifier.count() != n {
		t.Fatal("banning a banned user announced a change")
	}
	// A former member is banned without a kick.
	must(e.svc.Quit(bg, "dan", g.GroupID))(t)
	if m := must(ban("owner", "dan"))(t); m.Status != "banned" {
		t.Fatalf("banned former member: %+v", m)
	}
	_, err = e.svc.Join(bg, "dan", g.GroupID)
	wantReason(t, err, wire.ReasonJoinNotAllowed)
	_, err = e.svc.Invite(bg, "owner", group.UsersRequest{GroupID: g.GroupID, UserIDs: []string{"stranger", "dan"}})
	wantReason(t, err, wire.ReasonForbidden)
	if _, err := e.repo.Member(bg, g.GroupID, "stranger"); !errors.Is(err, domain.ErrNotGroupMember) {
		t.Fatalf("a refused invitation added someone: %v", err)
	}
	if m := must(e.svc.Unban(bg, "adm", group.MemberRequest{GroupID: g.GroupID, UserID: "dan"}))(t); m.Status != "kicked" {
		t.Fatalf("unbanned: %+v", m)
	}
	n = e.notifier.count()
	must(e.svc.Unban(bg, "adm", group.MemberRequest{GroupID: g.GroupID, UserID: "dan"}))(t)
	if e.notifier.count() != n {
		t.Fatal("unbanning a user who is not banned announced a change")
	}
	must(e.svc.Invite(bg, "owner", group.UsersRequest{GroupID: g.GroupID, UserIDs: []string{"dan"}}))(t)
	if err := e.members.CheckSend(bg, g.GroupID, "dan"); err != nil {
		t.Fatalf("after unban and invitation: %v", err)
	}
}
