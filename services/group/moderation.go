package group

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/nexo-im/nexo/domain"
	"github.com/nexo-im/nexo/store"
)

// Group moderation (docs/moderation.md): the owner and admins mute a
// member for a while, mute the whole group (only they speak), and ban a
// member (kicked, and refused re-joining and invitations until unbanned).
// Nobody moderates the owner, and an admin does not moderate an admin.
// Each change is announced with a notification and written as an audit
// line.

// MaxMuteSeconds bounds seconds of POST /group/mute_member: one year.
const MaxMuteSeconds = 366 * 24 * 3600

// MuteMemberRequest is the body of POST /group/mute_member; seconds 0
// lifts the mute.
type MuteMemberRequest struct {
	GroupID string `json:"group_id"`
	UserID  string `json:"user_id"`
	Seconds int64  `json:"seconds"`
}

// Validate checks the IDs and 0 <= seconds <= MaxMuteSeconds.
func (r *MuteMemberRequest) Validate() error {
	if err := domain.CheckID("group_id", r.GroupID); err != nil {
		return err
	}
	if err := domain.CheckID("user_id", r.UserID); err != nil {
		return err
	}
	if r.Seconds < 0 || r.Seconds > MaxMuteSeconds {
		return domain.BadField("seconds", "must be 0 (lift the mute) to %d", MaxMuteSeconds)
	}
	return nil
}

// MuteGroupRequest is the body of POST /group/mute.
type MuteGroupRequest struct {
	GroupID string `json:"group_id"`
	Muted   bool   `json:"muted"`
}

// Validate checks the group ID.
func (r *MuteGroupRequest) Validate() error { return domain.CheckID("group_id", r.GroupID) }

// MemberRequest is the body of POST /group/ban and POST /group/unban.
type MemberRequest struct {
	GroupID string `json:"group_id"`
	UserID  string `json:"user_id"`
}

// Validate checks the IDs.
func (r *MemberRequest) Validate() error {
	if err := domain.CheckID("group_id", r.GroupID); err != nil {
		return err
	}
	return domain.CheckID("user_id", r.UserID)
}

// checkMuted refuses a send of mem to g at now: forbidden while mem is
// muted, or while g is muted and mem is neither owner nor admin.
func checkMuted(g domain.Group, mem store.MemberState, now time.Time) error {
	if until := mem.MuteUntil; until > now.UnixMilli() {
		left := time.Until(time.UnixMilli(until)).Round(time.Second)
		return domain.NewError(domain.ErrForbidden, fmt.Sprintf("you are muted in this group for %s more", max(left, time.Second)))
	}
	if g.Muted && mem.Role < domain.RoleAdmin {
		return domain.NewError(domain.ErrForbidden, "the group is muted: only the owner and admins may send")
	}
	return nil
}

// moderate checks that moderator may moderate target: not oneself, not the
// owner, and an admin not an admin. Errors: bad_request, forbidden.
func moderate(moderator, target domain.GroupMember, what string) error {
	switch {
	case moderator.UserID == target.UserID:
		return domain.BadField("user_id", "must not be yourself")
	case target.RoleLevel == domain.RoleOwner:
		return domain.NewError(domain.ErrForbidden, "nobody "+what+" the owner")
	case target.RoleLevel >= domain.RoleAdmin && moderator.RoleLevel < domain.RoleOwner:
		return domain.NewError(domain.ErrForbidden, "an admin cannot "+what+" an admin")
	}
	return nil
}

// auditModeration writes the audit line of a moderation change.
func (s *Service) auditModeration(ctx context.Context, action, groupID, op string, attrs ...slog.Attr) {
	s.log.LogAttrs(ctx, slog.LevelInfo, "audit", append([]slog.Attr{slog.String("point", "group_moderation"),
		slog.String("action", action), slog.String("group_id", groupID), slog.String("op_user_id", op)}, attrs...)...)
}

// MuteMember mutes req.UserID in the group for req.Seconds (0 lifts it)
// and returns the member. The owner and admins may; the mute holds while
// the user is away too, so quitting and coming back does not lift it.
// Errors: group_not_found, group_dismissed, not_group_member /
// member_not_active (caller or user), forbidden, bad_request.
func (s *Service) MuteMember(ctx context.Context, caller string, req MuteMemberRequest) (MemberJSON, error) {
	var out MemberJSON
	err := s.locked(ctx, req.GroupID, func(ctx context.Context) error {
		_, op, err := s.authorize(ctx, req.GroupID, caller, domain.RoleAdmin, "only the owner and admins may mute members")
		if err != nil {
			return err
		}
		target, err := s.actor(ctx, req.GroupID, req.UserID)
		if err != nil {
			return err
		}
		if err := moderate(op, target, "mutes"); err != nil {
			return err
		}
		var until int64
		if req.Seconds > 0 {
			until = time.Now().Add(time.Duration(req.Seconds) * time.Second).UnixMilli()
		}
		if _, err := s.change(ctx, req.GroupID,
			func() (bool, error) { return true, s.groups.SetMuteUntil(ctx, req.GroupID, req.UserID, until) },
			func() error { return s.groups.SetMuteUntil(ctx, req.GroupID, req.UserID, target.MuteUntil) },
			func() (int64, error) {
				return s.notify(ctx, NotifyMemberMuted, NotificationJSON{GroupID: req.GroupID, OpUserID: caller,
					UserIDs: []string{req.UserID}, MuteUntil: until})
			}); err != nil {
			return err
		}
		s.auditModeration(ctx, "mute_member", req.GroupID, caller, slog.String("user_id", req.UserID), slog.Int64("mute_until", until))
		m, err := s.groups.Member(ctx, req.GroupID, req.UserID)
		out = MemberOf(m)
		return err
	})
	return out, err
}

// Mute mutes the group (only the owner and admins may send) or lifts it,
// and returns the group. The owner and admins may. Errors:
// group_not_found, group_dismissed, not_group_member / member_not_active,
// forbidden.
func (s *Service) Mute(ctx context.Context, caller string, req MuteGroupRequest) (GroupJSON, error) {
	var out GroupJSON
	err := s.locked(ctx, req.GroupID, func(ctx context.Context) error {
		g, _, err := s.authorize(ctx, req.GroupID, caller, domain.RoleAdmin, "only the owner and admins may mute the group")
		if err != nil {
			return err
		}
		if g.Muted != req.Muted {
			muted := req.Muted
			if _, err := s.change(ctx, req.GroupID,
				func() (bool, error) { return true, s.groups.SetMuted(ctx, req.GroupID, muted) },
				func() error { return s.groups.SetMuted(ctx, req.GroupID, g.Muted) },
				func() (int64, error) {
					return s.notify(ctx, NotifyGroupMuted, NotificationJSON{GroupID: req.GroupID, OpUserID: caller, Muted: &muted})
				}); err != nil {
				return err
			}
			s.auditModeration(ctx, "mute_group", req.GroupID, caller, slog.Bool("muted", muted))
		}
		out, err = s.view(ctx, req.GroupID)
		return err
	})
	return out, err
}

// Ban removes req.UserID from the group as a kick does (an active member
// keeps read access up to the ban notification) and refuses their
// re-joining and invitations until Unban; a former member is banned
// without a kick. Banning a banned user changes nothing. The owner and
// admins may. Errors: group_not_found, group_dismissed, not_group_member
// (caller, or a user who never was a member), member_not_active (caller),
// forbidden, bad_request.
func (s *Service) Ban(ctx context.Context, caller string, req MemberRequest) (MemberJSON, error) {
	var out MemberJSON
	err := s.locked(ctx, req.GroupID, func(ctx context.Context) error {
		_, op, err := s.authorize(ctx, req.GroupID, caller, domain.RoleAdmin, "only the owner and admins may ban")
		if err != nil {
			return err
		}
		target, err := s.groups.Member(ctx, req.GroupID, req.UserID)
		if err != nil {
			return err
		}
		if err := moderate(op, target, "bans"); err != nil {
			return err
		}
		switch target.Status {
		case domain.MemberBanned:
		case domain.MemberNormal:
			if _, err := s.remove(ctx, req.GroupID, caller, []string{req.UserID}, domain.MemberBanned, NotifyMemberBanned); err != nil {
				return err
			}
			s.auditModeration(ctx, "ban", req.GroupID, caller, slog.String("user_id", req.UserID), slog.Bool("removed", true))
		default:
			if err := s.setStatus(ctx, req.GroupID, caller, req.UserID, target.Status, domain.MemberBanned, NotifyMemberBanned); err != nil {
				return err
			}
			s.auditModeration(ctx, "ban", req.GroupID, caller, slog.String("user_id", req.UserID), slog.Bool("removed", false))
		}
		m, err := s.groups.Member(ctx, req.GroupID, req.UserID)
		out = MemberOf(m)
		return err
	})
	return out, err
}

// Unban lifts the ban of req.UserID: they are then as a kicked member is
// (back only through an invitation, or an application the owner or an
// admin accepts). Unbanning a user who is not banned changes nothing. The
// owner and admins may. Errors: group_not_found, group_dismissed,
// not_group_member, member_not_active (caller), forbidden.
func (s *Service) Unban(ctx context.Context, caller string, req MemberRequest) (MemberJSON, error) {
	var out MemberJSON
	err := s.locked(ctx, req.GroupID, func(ctx context.Context) error {
		if _, _, err := s.authorize(ctx, req.GroupID, caller, domain.RoleAdmin, "only the owner and admins may unban"); err != nil {
			return err
		}
		target, err := s.groups.Member(ctx, req.GroupID, req.UserID)
		if err != nil {
			return err
		}
		if target.Status == domain.MemberBanned {
			if err := s.setStatus(ctx, req.GroupID, caller, req.UserID, domain.MemberBanned, domain.MemberKicked, NotifyMemberUnbanned); err != nil {
				return err
			}
			s.auditModeration(ctx, "unban", req.GroupID, caller, slog.String("user_id", req.UserID))
		}
		m, err := s.groups.Member(ctx, req.GroupID, req.UserID)
		out = MemberOf(m)
		return err
	})
	return out, err
}

// setStatus moves a member who is not active from status from to to and
// announces it with t. Called under the group's lock.
func (s *Service) setStatus(ctx context.Context, groupID, op, userID string, from, to domain.MemberStatus, t domain.MsgType) error {
	_, err := s.change(ctx, groupID,
		func() (bool, error) {
			return s.groups.SetStatusFrom(ctx, groupID, userID, []domain.MemberStatus{from}, to)
		},
		func() error {
			_, err := s.groups.SetStatusFrom(ctx, groupID, userID, []domain.MemberStatus{to}, from)
			return err
		},
		func() (int64, error) {
			return s.notify(ctx, t, NotificationJSON{GroupID: groupID, OpUserID: op, UserIDs: []string{userID}})
		})
	return err
}

// refuseBanned refuses adding any of users who is banned from the group
// (field names them in the request): forbidden naming the first.
func refuseBanned(field string, rows map[string]domain.GroupMember, users []string) error {
	for _, u := range users {
		if m, ok := rows[u]; ok && m.Status == domain.MemberBanned {
			return domain.NewError(domain.ErrForbidden, fmt.Sprintf("%s: %s is banned from this group; unban them first", field, u))
		}
	}
	return nil
}
