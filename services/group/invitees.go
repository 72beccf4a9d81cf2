package group

import (
	"context"
	"fmt"

	"github.com/nexo-im/nexo/domain"
)

// Who may add a user to a group, besides the group's own rules
// (docs/groups.md, "Who may add you"): the user's group_invites choice,
// and limits.group_added on how often anyone adds them.

// ForApp returns the service as the app's server API uses it: adds are not
// counted against limits.group_added (the app's backend is trusted, as it
// is for limits.group_invite), and group names are not word-filtered (the
// app decides what it names a group); every other rule, group_invites
// included, holds. It shares everything else with s.
func (s *Service) ForApp() *Service {
	app := *s
	app.added, app.words = nil, nil
	return &app
}

// acceptedAdds refuses the add of users (field names them in the request) by
// adder unless each one's group_invites accepts adder and none blocked
// adder, then counts one add of each against limits.group_added. A user
// who does not accept is blocked with the same detail whatever the cause,
// so the adder cannot tell nobody from shared_groups or from a block.
// Called with users not yet active members, adder excluded.
func (s *Service) acceptedAdds(ctx context.Context, adder, field string, users []string) error {
	if len(users) == 0 {
		return nil
	}
	choices, err := s.users.GroupInvites(ctx, users)
	if err != nil {
		return fmt.Errorf("look up group_invites: %w", err)
	}
	var sharedOnly []string
	for _, u := range users {
		switch choices[u] {
		case domain.InvitesNobody:
			return notAccepting(field, u)
		case domain.InvitesSharedGroups:
			sharedOnly = append(sharedOnly, u)
		}
	}
	if s.blocks != nil {
		blockers, err := s.blocks.BlockersOf(ctx, adder, users)
		if err != nil {
			return fmt.Errorf("look up blocks: %w", err)
		}
		for _, u := range users {
			if blockers[u] {
				return notAccepting(field, u)
			}
		}
	}
	if len(sharedOnly) > 0 {
		if s.shared == nil {
			return notAccepting(field, sharedOnly[0])
		}
		shares, err := s.shared.SharedGroups(ctx, adder, sharedOnly)
		if err != nil {
			return fmt.Errorf("look up shared groups: %w", err)
		}
		for _, u := range sharedOnly {
			if !shares[u] {
				return notAccepting(field, u)
			}
		}
	}
	if s.added == nil {
		return nil
	}
	return s.added.AllowAdded(ctx, users)
}

func notAccepting(field, userID string) error {
	return domain.NewError(domain.ErrBlocked, fmt.Sprintf("%s: %s does not accept group invitations from you", field, userID))
}
