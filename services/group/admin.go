package group

import (
	"context"
	"fmt"

	"github.com/nexo-im/nexo/domain"
	"github.com/nexo-im/nexo/store"
)

// Transfer makes newOwner (an active member) the owner; the caller, who
// must be the owner, becomes an ordinary member. Errors: group_not_found,
// group_dismissed, not_group_member / member_not_active (caller or new
// owner), forbidden (caller not the owner), user_not_found (new owner not
// registered), bad_request (already the owner).
func (s *Service) Transfer(ctx context.Context, caller string, req TransferRequest) (GroupJSON, error) {
	var out GroupJSON
	err := s.locked(ctx, req.GroupID, func(ctx context.Context) error {
		g, err := s.activeGroup(ctx, req.GroupID)
		if err != nil {
			return err
		}
		if _, err := s.actor(ctx, req.GroupID, caller); err != nil {
			return err
		}
		if g.OwnerUserID != caller {
			return domain.NewError(domain.ErrForbidden, "only the owner may transfer the group")
		}
		if req.NewOwnerID == caller {
			return domain.NewError(domain.ErrInvalidArgument, "new_owner_id: already the owner")
		}
		if err := s.requireUsers(ctx, "new_owner_id", []string{req.NewOwnerID}); err != nil {
			return err
		}
		if _, err := s.actor(ctx, req.GroupID, req.NewOwnerID); err != nil {
			return err
		}
		_, err = s.change(ctx, req.GroupID,
			func() (bool, error) { return true, s.groups.Transfer(ctx, req.GroupID, caller, req.NewOwnerID) },
			func() error { return s.groups.Transfer(ctx, req.GroupID, req.NewOwnerID, caller) },
			func() (int64, error) {
				view, err := s.view(ctx, req.GroupID)
				if err != nil {
					return 0, err
				}
				out = view
				return s.notify(ctx, NotifyOwnerTransferred, NotificationJSON{GroupID: req.GroupID, OpUserID: caller,
					UserIDs: []string{req.NewOwnerID}, OldOwnerID: caller, NewOwnerID: req.NewOwnerID, Group: &view})
			})
		return err
	})
	return out, err
}

// SetRole sets an active member's role to admin (60) or member (20); only
// the owner may, and the owner's own role changes only by transfer.
// Setting the role a member already has changes nothing. Errors:
// group_not_found, group_dismissed, not_group_member / member_not_active
// (caller or target), forbidden, user_not_found (target not registered).
func (s *Service) SetRole(ctx context.Context, caller string, req SetRoleRequest) (MemberJSON, error) {
	var out MemberJSON
	role := domain.RoleLevel(req.RoleLevel)
	err := s.locked(ctx, req.GroupID, func(ctx context.Context) error {
		if _, _, err := s.authorize(ctx, req.GroupID, caller, domain.RoleOwner, "only the owner may set roles"); err != nil {
			return err
		}
		if req.UserID == caller {
			return domain.NewError(domain.ErrForbidden, "the owner's role changes only by /group/transfer")
		}
		if err := s.requireUsers(ctx, "user_id", []string{req.UserID}); err != nil {
			return err
		}
		target, err := s.actor(ctx, req.GroupID, req.UserID)
		if err != nil {
			return err
		}
		if target.RoleLevel != role {
			_, err = s.change(ctx, req.GroupID,
				func() (bool, error) { return true, s.groups.SetRole(ctx, req.GroupID, req.UserID, role) },
				func() error { return s.groups.SetRole(ctx, req.GroupID, req.UserID, target.RoleLevel) },
				func() (int64, error) {
					return s.notify(ctx, NotifyRoleChanged, NotificationJSON{GroupID: req.GroupID, OpUserID: caller,
						UserIDs: []string{req.UserID}, RoleLevel: int(role)})
				})
			if err != nil {
				return err
			}
			target.RoleLevel = role
		}
		out = MemberOf(target)
		return nil
	})
	return out, err
}

// Dismiss stops the group: from then on every send is refused with
// group_dismissed, and members keep read access to the history. Only the
// owner may. Errors: group_not_found, group_dismissed (already),
// not_group_member / member_not_active, forbidden.
func (s *Service) Dismiss(ctx context.Context, caller, groupID string) (GroupJSON, error) {
	var out GroupJSON
	err := s.locked(ctx, groupID, func(ctx context.Context) error {
		g, err := s.activeGroup(ctx, groupID)
		if err != nil {
			return err
		}
		if _, err := s.actor(ctx, groupID, caller); err != nil {
			return err
		}
		if g.OwnerUserID != caller {
			return domain.NewError(domain.ErrForbidden, "only the owner may dismiss the group")
		}
		_, err = s.change(ctx, groupID,
			func() (bool, error) { return true, s.groups.SetStatus(ctx, groupID, domain.GroupDismissed) },
			func() error { return s.groups.SetStatus(ctx, groupID, domain.GroupNormal) },
			func() (int64, error) {
				view, err := s.view(ctx, groupID)
				if err != nil {
					return 0, err
				}
				out = view
				return s.notify(ctx, NotifyGroupDismissed, NotificationJSON{GroupID: groupID, OpUserID: caller, Group: &view})
			})
		return err
	})
	return out, err
}

// Update changes the group's name, introduction, avatar, join policy or
// invite permission; the owner and admins may. Fields equal to the current value are not
// changes; with none, nothing is announced. Errors: group_not_found,
// group_dismissed, not_group_member / member_not_active, forbidden,
// blocked_word (a new name holding a filtered word; under mask it is masked).
func (s *Service) Update(ctx context.Context, caller string, req UpdateRequest) (GroupJSON, error) {
	if err := s.filterName(req.Name); err != nil {
		return GroupJSON{}, err
	}
	var out GroupJSON
	err := s.locked(ctx, req.GroupID, func(ctx context.Context) error {
		g, _, err := s.authorize(ctx, req.GroupID, caller, domain.RoleAdmin, "only the owner and admins may update the group")
		if err != nil {
			return err
		}
		var u, old store.GroupUpdate
		var changed []string
		for _, f := range []struct {
			name      string
			want      *string
			have      string
			dst, prev **string
		}{
			{"name", req.Name, g.Name, &u.Name, &old.Name},
			{"introduction", req.Introduction, g.Introduction, &u.Introduction, &old.Introduction},
			{"avatar", req.Avatar, g.Avatar, &u.Avatar, &old.Avatar},
			{"join_policy", req.JoinPolicy, g.JoinPolicy, &u.JoinPolicy, &old.JoinPolicy},
			// Compared with the effective value: setting what already
			// applies is no change (and keeps following the server's).
			{"invite_permission", req.InvitePermission, s.invitePermission(g), &u.InvitePermission, &old.InvitePermission},
		} {
			if f.want != nil && *f.want != f.have {
				have := f.have
				*f.dst, *f.prev = f.want, &have
				changed = append(changed, f.name)
			}
		}
		if u.InvitePermission != nil { // undo restores the stored value, "" included
			stored := g.InvitePermission
			old.InvitePermission = &stored
		}
		_, err = s.change(ctx, req.GroupID,
			func() (bool, error) {
				if len(changed) == 0 {
					return false, nil
				}
				_, err := s.groups.Update(ctx, req.GroupID, u)
				return err == nil, err
			},
			func() error { _, err := s.groups.Update(ctx, req.GroupID, old); return err },
			func() (int64, error) {
				view, err := s.view(ctx, req.GroupID)
				if err != nil {
					return 0, err
				}
				out = view
				return s.notify(ctx, NotifyGroupUpdated, NotificationJSON{GroupID: req.GroupID, OpUserID: caller, Changed: changed, Group: &view})
			})
		if err != nil {
			return err
		}
		if len(changed) == 0 {
			out, err = s.view(ctx, req.GroupID)
		}
		return err
	})
	return out, err
}

// view renders the group as stored now, with its active member count.
func (s *Service) view(ctx context.Context, groupID string) (GroupJSON, error) {
	g, err := s.groups.Get(ctx, groupID)
	if err != nil {
		return GroupJSON{}, err
	}
	counts, err := s.groups.ActiveCounts(ctx, []string{groupID})
	if err != nil {
		return GroupJSON{}, fmt.Errorf("count members of %s: %w", groupID, err)
	}
	return s.render(g, counts[groupID]), nil
}
