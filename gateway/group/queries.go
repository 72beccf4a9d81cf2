package group

import (
	"context"
	"fmt"

	"github.com/nexo-im/nexo/gateway/wire"
)

// Info returns a group with its number of active members, from the member
// cache. Any signed-in user may read it (to decide whether to join an open
// group). Errors: group_not_found.
func (s *Service) Info(ctx context.Context, groupID string) (GroupJSON, error) {
	g, n, err := s.members.Group(ctx, groupID)
	if err != nil {
		return GroupJSON{}, err
	}
	return GroupOf(g, n), nil
}

// Members returns a page of the group's active members (owner first, then
// admins, then members, each in joining order) and their total; only
// active members may list them (also after the group is dismissed).
// limit 0 means DefaultMembersPage; above MaxMembersPage is bad_request.
// Errors: group_not_found, not_group_member, member_not_active.
func (s *Service) Members(ctx context.Context, caller, groupID string, offset, limit int) (MembersPage, error) {
	switch {
	case offset < 0:
		return MembersPage{}, wire.NewError(wire.ReasonBadRequest, "offset: must be >= 0")
	case limit < 0 || limit > MaxMembersPage:
		return MembersPage{}, wire.NewError(wire.ReasonBadRequest, fmt.Sprintf("limit: must be 1–%d", MaxMembersPage))
	case limit == 0:
		limit = DefaultMembersPage
	}
	if _, err := s.members.CheckMember(ctx, groupID, caller); err != nil {
		return MembersPage{}, err
	}
	rows, total, err := s.groups.ListMembers(ctx, groupID, offset, limit)
	if err != nil {
		return MembersPage{}, err
	}
	page := MembersPage{Members: make([]MemberJSON, len(rows)), Total: total}
	for i := range rows {
		page.Members[i] = MemberOf(rows[i])
	}
	return page, nil
}

// List returns the groups caller is an active member of, dismissed ones
// included, oldest first.
func (s *Service) List(ctx context.Context, caller string) (GroupList, error) {
	groups, err := s.groups.UserGroups(ctx, caller)
	if err != nil {
		return GroupList{}, err
	}
	ids := make([]string, len(groups))
	for i := range groups {
		ids[i] = groups[i].ID
	}
	counts, err := s.groups.ActiveCounts(ctx, ids)
	if err != nil {
		return GroupList{}, err
	}
	out := GroupList{Groups: make([]GroupJSON, len(groups))}
	for i := range groups {
		out.Groups[i] = GroupOf(groups[i], counts[groups[i].ID])
	}
	return out, nil
}
