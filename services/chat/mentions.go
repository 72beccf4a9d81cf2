package chat

import (
	"context"
	"errors"
	"fmt"

	"github.com/nexo-im/nexo/domain"
)

// checkMentions checks m.AtUserIDs against the conversation (their shape
// was checked with the request): in a group each ID must be an active
// member, and AtAll is for the owner and admins only; in single chat only
// the two parties may be mentioned. It runs after authorize and the check
// for a saved original, before before_send and before anything is
// allocated, so the app's webhook never sees a send refused anyway. Errors: bad_request naming the ID,
// forbidden for @all by a plain member, or the member lookup's error.
func (s *Service) checkMentions(ctx context.Context, m *domain.Message) error {
	if len(m.AtUserIDs) == 0 {
		return nil
	}
	seen := make(map[string]bool, len(m.AtUserIDs))
	for _, u := range m.AtUserIDs {
		if seen[u] {
			continue
		}
		seen[u] = true
		if err := s.checkMention(ctx, m, u); err != nil {
			return err
		}
	}
	return nil
}

func (s *Service) checkMention(ctx context.Context, m *domain.Message, u string) error {
	if m.SessionType != domain.SessionGroup {
		if u != m.SenderID && u != m.RecvID {
			return domain.BadField("at_user_ids", "%q is not a party of this conversation", u)
		}
		return nil
	}
	if s.groups == nil {
		return domain.ErrGroupNotFound
	}
	if u == AtAll {
		role, err := s.groups.CheckMember(ctx, m.GroupID, m.SenderID)
		if err != nil {
			return err
		}
		if role < domain.RoleAdmin {
			return domain.NewError(domain.ErrForbidden, "at_user_ids: only the group's owner and admins may mention \"all\"")
		}
		return nil
	}
	_, err := s.groups.CheckMember(ctx, m.GroupID, u)
	switch {
	case errors.Is(err, domain.ErrNotGroupMember), errors.Is(err, domain.ErrMemberNotActive):
		return domain.BadField("at_user_ids", "%q is not a member of the group", u)
	case err != nil:
		return fmt.Errorf("check mention of %s: %w", u, err)
	}
	return nil
}
