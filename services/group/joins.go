package group

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/nexo-im/nexo/configs"
	"github.com/nexo-im/nexo/domain"
)

// Adding members is announced first and written second: the notification's
// seq is the new members' join_seq, so every message allocated before it is
// invisible to them and every later one visible, with no lock on the send
// path. Removing members is written first and announced second: once the
// cache is invalidated their sends are refused and fanouts skip them, and
// their cap becomes the notification's seq. docs/groups.md explains why.

// Create makes a group owned by caller with the distinct users of
// req.MemberIDs (caller excluded) as members; together they must reach
// group.min_create_members. Everyone's join_seq is the seq of the creation
// notification. Errors: bad_request (too few or too many users),
// user_not_found (an unregistered member), blocked (a member whose
// group_invites refuses caller, or who blocked caller), too_many_requests (limits.group_added),
// blocked_word (the name holds a filtered word; under mask it is masked).
func (s *Service) Create(ctx context.Context, caller string, req CreateRequest) (GroupJSON, error) {
	if err := s.filterName(&req.Name); err != nil {
		return GroupJSON{}, err
	}
	others := distinct(req.MemberIDs, caller)
	if n := len(others) + 1; n < s.cfg.MinCreateMembers {
		return GroupJSON{}, domain.NewError(domain.ErrInvalidArgument, fmt.Sprintf("member_ids: a group needs at least %d distinct users including its creator (got %d); two people use single chat", s.cfg.MinCreateMembers, n))
	}
	if err := s.checkCount("member_ids", len(others)); err != nil {
		return GroupJSON{}, err
	}
	if n := len(others) + 1; n > s.cfg.MaxMembers {
		return GroupJSON{}, domain.NewError(domain.ErrInvalidArgument, fmt.Sprintf("member_ids: a group has at most %d members (group.max_members; got %d)", s.cfg.MaxMembers, n))
	}
	if err := s.requireUsers(ctx, "member_ids", append([]string{caller}, others...)); err != nil {
		return GroupJSON{}, err
	}
	if err := s.acceptedAdds(ctx, caller, "member_ids", others); err != nil {
		return GroupJSON{}, err
	}
	id, err := uuid.NewV7()
	if err != nil {
		return GroupJSON{}, fmt.Errorf("group id: %w", err)
	}
	now := time.Now().UnixMilli()
	policy := req.JoinPolicy
	if policy == "" {
		policy = PolicyInviteOnly
	}
	g := domain.Group{ID: id.String(), Name: req.Name, Introduction: req.Introduction, Avatar: req.Avatar,
		Status: domain.GroupNormal, CreatorUserID: caller, OwnerUserID: caller, GroupType: req.GroupType, JoinPolicy: policy,
		InvitePermission: req.InvitePermission, CreatedAt: now, UpdatedAt: now}
	everyone := append([]string{caller}, others...)
	// No lock: nobody else knows the ID yet. Like a locked change, it runs
	// to its end once begun (bounded by group.lock_ttl).
	opCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.cfg.LockTTL)
	defer cancel()
	preview := s.render(g, len(everyone))
	seq, err := s.notify(opCtx, NotifyGroupCreated, NotificationJSON{GroupID: g.ID, OpUserID: caller, UserIDs: everyone, Group: &preview})
	if err != nil {
		return GroupJSON{}, err
	}
	members := make([]domain.GroupMember, 0, len(everyone))
	members = append(members, domain.GroupMember{UserID: caller, RoleLevel: domain.RoleOwner, JoinSeq: seq})
	for _, u := range others {
		members = append(members, domain.GroupMember{UserID: u, RoleLevel: domain.RoleMember, JoinSeq: seq, InviterUserID: caller})
	}
	stored, err := s.groups.Create(opCtx, g, members)
	if err != nil {
		return GroupJSON{}, err
	}
	// A lookup before the commit may have remembered "no such group".
	if err := s.invalidateAdded(opCtx, g.ID); err != nil {
		return GroupJSON{}, err
	}
	return s.render(stored, len(members)), nil
}

// Join adds caller to an open group; its join_seq is the seq of its join
// notification. On an approval group it files an application instead
// (JoinWithMessage) and answers status "pending". Joining again while a
// member changes nothing. A user who was kicked comes back only through an
// invitation, whatever the policy, and a banned user not at all.
// Errors: group_not_found, group_dismissed, join_not_allowed (invite_only,
// kicked, or banned).
func (s *Service) Join(ctx context.Context, caller, groupID string) (MemberJSON, error) {
	return s.JoinWithMessage(ctx, caller, groupID, "")
}

// JoinWithMessage is Join with reqMsg, the message an application to an
// approval group carries to its owner and admins.
func (s *Service) JoinWithMessage(ctx context.Context, caller, groupID, reqMsg string) (MemberJSON, error) {
	var out MemberJSON
	err := s.locked(ctx, groupID, func(ctx context.Context) error {
		g, err := s.activeGroup(ctx, groupID)
		if err != nil {
			return err
		}
		m, err := s.groups.Member(ctx, groupID, caller)
		switch {
		case err == nil && m.Status == domain.MemberNormal:
			out = MemberOf(m)
			return nil
		case err == nil && m.Status == domain.MemberKicked:
			return domain.NewError(domain.ErrJoinNotAllowed, "you were removed from this group; only an invitation brings you back")
		case err == nil && m.Status == domain.MemberBanned:
			return domain.NewError(domain.ErrJoinNotAllowed, "you are banned from this group")
		}
		switch g.JoinPolicy {
		case PolicyOpen:
		case PolicyApproval:
			out, err = s.apply(ctx, caller, groupID, reqMsg)
			return err
		default:
			return fmt.Errorf("group %s is %s: %w", groupID, g.JoinPolicy, domain.ErrJoinNotAllowed)
		}
		added, err := s.add(ctx, groupID, caller, "", []string{caller}, NotifyMemberJoined)
		if err != nil {
			return err
		}
		out = added[0]
		return nil
	})
	return out, err
}

// Invite adds users to the group (users who quit or were kicked come back
// with a new join_seq); those already active members are skipped. Any
// active member may invite, or only owner and admins when the group's
// invite_permission (else group.invite_permission) is admins. Errors: group_not_found,
// group_dismissed, not_group_member / member_not_active (caller),
// forbidden (also for a user banned from the group), blocked (a user whose
// group_invites refuses caller, or who blocked caller),
// user_not_found, bad_request (too many users), too_many_requests
// (limits.group_added).
func (s *Service) Invite(ctx context.Context, caller string, req UsersRequest) (InviteResult, error) {
	out := InviteResult{GroupID: req.GroupID, Invited: []MemberJSON{}, Skipped: []string{}}
	ids := distinct(req.UserIDs, "")
	if err := s.checkCount("user_ids", len(ids)); err != nil {
		return out, err
	}
	err := s.locked(ctx, req.GroupID, func(ctx context.Context) error {
		g, err := s.activeGroup(ctx, req.GroupID)
		if err != nil {
			return err
		}
		inviter, err := s.actor(ctx, req.GroupID, caller)
		if err != nil {
			return err
		}
		if s.invitePermission(g) == configs.InviteByAdmins {
			if err := requireRole(inviter, domain.RoleAdmin, "only the owner and admins may invite to this group (invite_permission admins)"); err != nil {
				return err
			}
		}
		if err := s.requireUsers(ctx, "user_ids", ids); err != nil {
			return err
		}
		rows, err := s.groups.MembersOf(ctx, req.GroupID, ids)
		if err != nil {
			return err
		}
		var add []string
		for _, id := range ids {
			if m, ok := rows[id]; ok && m.Status == domain.MemberNormal {
				out.Skipped = append(out.Skipped, id)
			} else {
				add = append(add, id)
			}
		}
		if err := refuseBanned("user_ids", rows, add); err != nil {
			return err
		}
		if err := s.acceptedAdds(ctx, caller, "user_ids", add); err != nil {
			return err
		}
		if len(add) == 0 {
			return nil
		}
		out.Invited, err = s.add(ctx, req.GroupID, caller, caller, add, NotifyMemberInvited)
		return err
	})
	return out, err
}

// add announces then writes new members (role member) and invalidates the
// cache, and returns them as stored. Called under the group's lock.
func (s *Service) add(ctx context.Context, groupID, op, inviter string, users []string, t domain.MsgType) ([]MemberJSON, error) {
	counts, err := s.groups.ActiveCounts(ctx, []string{groupID})
	if err != nil {
		return nil, err
	}
	if n := counts[groupID] + len(users); n > s.cfg.MaxMembers {
		return nil, domain.NewError(domain.ErrInvalidArgument, fmt.Sprintf("the group would have %d members; at most %d (group.max_members)", n, s.cfg.MaxMembers))
	}
	seq, err := s.notify(ctx, t, NotificationJSON{GroupID: groupID, OpUserID: op, UserIDs: users})
	if err != nil {
		return nil, err
	}
	members := make([]domain.GroupMember, len(users))
	for i, u := range users {
		members[i] = domain.GroupMember{UserID: u, RoleLevel: domain.RoleMember, JoinSeq: seq, InviterUserID: inviter}
	}
	if err := s.groups.AddMembers(ctx, groupID, members); err != nil {
		s.log.Error("group members announced but not written; a retry announces them again",
			"group_id", groupID, "seq", seq, "users", len(users), "err", err)
		return nil, err
	}
	if err := s.invalidateAdded(ctx, groupID); err != nil {
		return nil, err
	}
	rows, err := s.groups.MembersOf(ctx, groupID, users)
	if err != nil {
		return nil, err
	}
	out := make([]MemberJSON, 0, len(users))
	for _, u := range users {
		out = append(out, MemberOf(rows[u]))
	}
	return out, nil
}

// Quit removes caller from the group; it keeps read access up to its quit
// notification's seq. Errors: group_not_found, group_dismissed,
// not_group_member, member_not_active, owner_cannot_quit (transfer first).
func (s *Service) Quit(ctx context.Context, caller, groupID string) (MemberJSON, error) {
	var out MemberJSON
	err := s.locked(ctx, groupID, func(ctx context.Context) error {
		if _, err := s.activeGroup(ctx, groupID); err != nil {
			return err
		}
		m, err := s.actor(ctx, groupID, caller)
		if err != nil {
			return err
		}
		if m.RoleLevel == domain.RoleOwner {
			return fmt.Errorf("%s owns group %s: %w", caller, groupID, domain.ErrOwnerCannotQuit)
		}
		if _, err := s.remove(ctx, groupID, caller, []string{caller}, domain.MemberLeft, NotifyMemberQuit); err != nil {
			return err
		}
		m, err = s.groups.Member(ctx, groupID, caller)
		out = MemberOf(m)
		return err
	})
	return out, err
}

// Kick removes users from the group. The owner and admins may kick;
// nobody kicks the owner and an admin cannot kick an admin (the whole
// request is refused with forbidden). Users who are not active members are
// skipped. Each kicked member keeps read access up to the kick
// notification's seq. Errors: group_not_found, group_dismissed,
// not_group_member / member_not_active (caller), forbidden, bad_request
// (kicking oneself, too many users).
func (s *Service) Kick(ctx context.Context, caller string, req UsersRequest) (KickResult, error) {
	out := KickResult{GroupID: req.GroupID, Kicked: []string{}, Skipped: []string{}}
	ids := distinct(req.UserIDs, "")
	if err := s.checkCount("user_ids", len(ids)); err != nil {
		return out, err
	}
	for _, id := range ids {
		if id == caller {
			return out, domain.NewError(domain.ErrInvalidArgument, "user_ids: to leave a group use /group/quit")
		}
	}
	err := s.locked(ctx, req.GroupID, func(ctx context.Context) error {
		_, kicker, err := s.authorize(ctx, req.GroupID, caller, domain.RoleAdmin, "only the owner and admins may kick")
		if err != nil {
			return err
		}
		rows, err := s.groups.MembersOf(ctx, req.GroupID, ids)
		if err != nil {
			return err
		}
		var kick []string
		for _, id := range ids {
			m, ok := rows[id]
			switch {
			case !ok || m.Status != domain.MemberNormal:
				out.Skipped = append(out.Skipped, id)
				continue
			case m.RoleLevel == domain.RoleOwner:
				return domain.NewError(domain.ErrForbidden, "nobody kicks the owner: "+id)
			case m.RoleLevel >= domain.RoleAdmin && kicker.RoleLevel < domain.RoleOwner:
				return domain.NewError(domain.ErrForbidden, "an admin cannot kick an admin: "+id)
			}
			kick = append(kick, id)
		}
		if len(kick) == 0 {
			return nil
		}
		removed, err := s.remove(ctx, req.GroupID, caller, kick, domain.MemberKicked, NotifyMemberKicked)
		out.Kicked = append(out.Kicked, removed...)
		return err
	})
	return out, err
}

// remove writes the removal (status and a provisional cap), invalidates the
// cache, announces it, then sets each removed member's cap to the
// notification's seq. It returns the users removed. Called under the lock.
func (s *Service) remove(ctx context.Context, groupID, op string, users []string, status domain.MemberStatus, t domain.MsgType) ([]string, error) {
	var prev []domain.GroupMember
	var removed []string
	seq, err := s.change(ctx, groupID,
		func() (bool, error) {
			var err error
			prev, err = s.groups.Deactivate(ctx, groupID, users, status)
			for _, m := range prev {
				removed = append(removed, m.UserID)
			}
			return len(prev) > 0, err
		},
		func() error { return s.groups.Reactivate(ctx, groupID, prev) },
		func() (int64, error) {
			return s.notify(ctx, t, NotificationJSON{GroupID: groupID, OpUserID: op, UserIDs: removed})
		})
	if err != nil || seq == 0 {
		return nil, err
	}
	if err := s.groups.SetCap(ctx, groupID, removed, seq); err != nil {
		// The provisional cap stays: lower than the notification, never
		// past it.
		s.log.Error("final cap not written; the provisional one stays", "group_id", groupID, "seq", seq, "err", err)
		return removed, nil
	}
	if err := s.members.Invalidate(ctx, groupID); err != nil {
		s.log.Warn("group cache invalidation after cap failed", "group_id", groupID, "err", err)
	}
	return removed, nil
}
