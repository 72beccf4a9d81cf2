package group_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/nexo-im/nexo/domain"
	"github.com/nexo-im/nexo/gateway/limits"
	"github.com/nexo-im/nexo/gateway/wire"
	"github.com/nexo-im/nexo/services/group"
	"github.com/nexo-im/nexo/store"
)

// setGroupInvites stores userID's group_invites choice.
func (e *env) setGroupInvites(userID string, g domain.GroupInvites) {
	e.t.Helper()
	if _, err := e.users.Update(context.Background(), userID, store.UserUpdate{GroupInvites: &g}); err != nil {
		e.t.Fatal(err)
	}
}

// notAccepted fails unless err is blocked saying that userID does not
// accept invitations, and returns its detail with userID blanked.
func notAccepted(t *testing.T, err error, userID string) string {
	t.Helper()
	wantReason(t, err, wire.ReasonBlocked)
	detail := wire.FromError(err).Detail
	if !strings.Contains(detail, userID+" does not accept group invitations from you") {
		t.Fatalf("refusal %q does not name %s", detail, userID)
	}
	return strings.ReplaceAll(detail, userID, "X")
}

// TestGroupInvitesChoice: nobody adds a user whose group_invites is
// nobody; only users who share a group with them add one whose choice is
// shared_groups; both refusals read the same; the app's server API obeys
// the choice too; a refused add adds no one.
func TestGroupInvitesChoice(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.addUsers("owner", "friend", "other", "shy", "picky", "outsider")
	e.setGroupInvites("shy", domain.InvitesNobody)
	e.setGroupInvites("picky", domain.InvitesSharedGroups)

	create := func(svc *group.Service, by string, members ...string) (group.GroupJSON, error) {
		return svc.Create(bg, by, group.CreateRequest{Name: "g", MemberIDs: members, JoinPolicy: group.PolicyOpen})
	}
	invite := func(svc *group.Service, by, groupID string, users ...string) error {
		_, err := svc.Invite(bg, by, group.UsersRequest{GroupID: groupID, UserIDs: users})
		return err
	}
	_, err := create(e.svc, "owner", "friend", "shy")
	refusedNobody := notAccepted(t, err, "shy")
	_, err = create(e.svc, "owner", "friend", "picky")
	refusedShared := notAccepted(t, err, "picky")
	if refusedNobody != refusedShared {
		t.Fatalf("nobody and shared_groups refuse differently: %q, %q", refusedNobody, refusedShared)
	}
	if !strings.HasPrefix(refusedNobody, "member_ids: ") {
		t.Fatalf("refusal %q does not name the field", refusedNobody)
	}

	g := e.create("owner", "friend", "other")
	for _, u := range []string{"shy", "picky"} {
		notAccepted(t, invite(e.svc, "owner", g.GroupID, "friend", u), u)
		notAccepted(t, invite(e.svc.ForApp(), "owner", g.GroupID, u), u) // the app's backend obeys it too
		if _, err := e.repo.Member(bg, g.GroupID, u); !errors.Is(err, domain.ErrNotGroupMember) && !errors.Is(err, domain.ErrNotFound) {
			t.Fatalf("%s after the refused invitation: %v", u, err)
		}
	}

	// picky joins the open group by themself: now the owner and its members
	// share a group with picky and may add them elsewhere; an outsider may
	// not. Nobody may add shy, whatever they share.
	must(e.svc.Join(bg, "picky", g.GroupID))(t)
	must(create(e.svc, "friend", "other", "picky"))(t)
	_, err = create(e.svc, "outsider", "other", "picky")
	notAccepted(t, err, "picky")
	must(e.svc.Join(bg, "shy", g.GroupID))(t)
	_, err = create(e.svc, "owner", "friend", "shy")
	notAccepted(t, err, "shy")

	// Everyone is the default, and choosing it again lets anyone add.
	e.setGroupInvites("shy", domain.InvitesEveryone)
	must(create(e.svc, "outsider", "other", "shy"))(t)
}

// TestGroupAddedLimit: limits.group_added counts how often one user is
// added to groups, whoever adds them: past it, adding that user is
// too_many_requests naming the limit and the user; skipped members do not
// count; the app's server API is not counted.
func TestGroupAddedLimit(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.addUsers("a", "c", "b1", "b2", "b3", "b4", "target")
	lim := limits.NewAdded(limits.New(e.rdb, e.keys.Prefix, nil, nil), limits.Rule{Rate: 2, Period: time.Hour, Burst: 2})
	svc := group.NewService(group.Deps{Config: e.cfg.Group, Groups: e.repo, Users: e.users, Members: e.members,
		Shared: store.NewContacts(e.db), Added: lim, Locks: e.cache, Notifier: e.notifier, Log: quiet})
	create := func(svc *group.Service, by string, members ...string) (group.GroupJSON, error) {
		return svc.Create(bg, by, group.CreateRequest{Name: "g", MemberIDs: members, JoinPolicy: group.PolicyOpen})
	}

	g1 := must(create(svc, "a", "b1", "target"))(t)
	res, err := svc.Invite(bg, "a", group.UsersRequest{GroupID: g1.GroupID, UserIDs: []string{"target"}})
	if err != nil || len(res.Skipped) != 1 {
		t.Fatalf("inviting a member again: %+v %v", res, err)
	}
	must(create(svc, "c", "b2", "target"))(t) // the second add, by someone else
	_, err = create(svc, "c", "b3", "target")
	wantReason(t, err, wire.ReasonTooManyRequests)
	we := wire.FromError(err)
	if !strings.Contains(we.Detail, "limits.group_added") || !strings.Contains(we.Detail, "target") || we.RetryAfter <= 0 {
		t.Fatalf("refusal %+v: want the limit, the user and a retry-after", we)
	}
	must(create(svc.ForApp(), "c", "b4", "target"))(t)
}
