package group

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/nexo-im/nexo/domain"
)

// Info returns a group with its number of active members, from the member
// cache, whatever its policy: for the server API and other trusted callers.
// Users go through InfoFor. Errors: group_not_found.
func (s *Service) Info(ctx context.Context, groupID string) (GroupJSON, error) {
	g, n, err := s.members.Group(ctx, groupID)
	if err != nil {
		return GroupJSON{}, err
	}
	return s.render(g, n), nil
}

// InfoFor is Info as a user may see it (GET /group/info): an open group's
// is public (a user decides whether to join it); any other group's is for
// its members, current or former (they keep reading the history up to
// when they left). Errors: group_not_found, not_group_member.
func (s *Service) InfoFor(ctx context.Context, caller, groupID string) (GroupJSON, error) {
	g, n, err := s.members.Group(ctx, groupID)
	if err != nil {
		return GroupJSON{}, err
	}
	if g.JoinPolicy != PolicyOpen {
		if _, err := s.members.CheckMember(ctx, groupID, caller); err != nil && !errors.Is(err, domain.ErrMemberNotActive) {
			return GroupJSON{}, err
		}
	}
	return s.render(g, n), nil
}

// Members returns a page of the group's active members (owner first, then
// admins, then members, each in joining order) and their total; only
// active members may list them (also after the group is dismissed).
// limit 0 means DefaultMembersPage; above MaxMembersPage is bad_request.
// Errors: group_not_found, not_group_member, member_not_active.
func (s *Service) Members(ctx context.Context, caller, groupID string, offset, limit int) (MembersPage, error) {
	switch {
	case offset < 0:
		return MembersPage{}, domain.NewError(domain.ErrInvalidArgument, "offset: must be >= 0")
	case limit < 0 || limit > MaxMembersPage:
		return MembersPage{}, domain.NewError(domain.ErrInvalidArgument, fmt.Sprintf("limit: must be 1–%d", MaxMembersPage))
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

// List returns a page of the groups caller is an active member of,
// dismissed ones included, oldest first. cursor is next_cursor of the
// previous page ("" for the first); limit 0 means DefaultListPage, above
// MaxListPage is bad_request.
func (s *Service) List(ctx context.Context, caller, cursor string, limit int) (GroupList, error) {
	limit, err := pageLimit(limit)
	if err != nil {
		return GroupList{}, err
	}
	var afterAt int64
	var afterID string
	if cursor != "" {
		// "<created_at>:<group_id>": IDs never contain a colon.
		at, id, ok := strings.Cut(cursor, ":")
		n, err := strconv.ParseInt(at, 10, 64)
		if !ok || err != nil || !domain.ValidID(id) {
			return GroupList{}, domain.BadField("cursor", "is not a cursor this list returned")
		}
		afterAt, afterID = n, id
	}
	groups, err := s.groups.UserGroups(ctx, caller, afterAt, afterID, limit+1)
	if err != nil {
		return GroupList{}, err
	}
	out := GroupList{}
	if len(groups) > limit {
		groups = groups[:limit]
		last := groups[limit-1]
		out.NextCursor = strconv.FormatInt(last.CreatedAt, 10) + ":" + last.ID
	}
	ids := make([]string, len(groups))
	for i := range groups {
		ids[i] = groups[i].ID
	}
	counts, err := s.groups.ActiveCounts(ctx, ids)
	if err != nil {
		return GroupList{}, err
	}
	out.Groups = make([]GroupJSON, len(groups))
	for i := range groups {
		out.Groups[i] = s.render(groups[i], counts[groups[i].ID])
	}
	return out, nil
}
