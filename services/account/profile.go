package account

import (
	"context"
	"errors"
	"fmt"

	"github.com/nexo-im/nexo/domain"
	"github.com/nexo-im/nexo/store"
)

// ProfileJSON is a user as their owner sees them; the password hash never
// leaves.
type ProfileJSON struct {
	UserID    string `json:"user_id"`
	Nickname  string `json:"nickname"`
	Avatar    string `json:"avatar"`
	CreatedAt int64  `json:"created_at"`
	UpdatedAt int64  `json:"updated_at"`
	// GroupInvites is who may add the user to groups: everyone,
	// shared_groups or nobody.
	GroupInvites domain.GroupInvites `json:"group_invites"`
	// DMPolicy is who may write to the user in a single chat: everyone,
	// shared_groups or nobody.
	DMPolicy domain.DMPolicy `json:"dm_policy"`
}

func profileOf(u domain.User) ProfileJSON {
	return ProfileJSON{UserID: u.ID, Nickname: u.Nickname, Avatar: u.Avatar, CreatedAt: u.CreatedAt, UpdatedAt: u.UpdatedAt,
		GroupInvites: u.GroupInvites.OrDefault(), DMPolicy: u.DMPolicy.OrDefault()}
}

// PublicProfileJSON is what a user sees of someone they share a
// conversation or a group with: the fields a chat shows beside a message.
// When an account was created or last changed, and whom it accepts
// invitations from, are its owner's business (docs/security.md).
type PublicProfileJSON struct {
	UserID   string `json:"user_id"`
	Nickname string `json:"nickname"`
	Avatar   string `json:"avatar"`
}

// Info returns userID's profile as caller may see it: with userID "" or
// the caller's own, the full ProfileJSON; for a user who shares a
// conversation or a group with the caller, the PublicProfileJSON. Anyone
// else is domain.ErrUserNotFound, as an unknown user is: the answer does
// not tell whether a user_id exists (docs/security.md).
func (s *Service) Info(ctx context.Context, caller, userID string) (any, error) {
	if userID == "" || userID == caller {
		u, err := s.users.Get(ctx, caller)
		if err != nil {
			return nil, err
		}
		return profileOf(u), nil
	}
	if err := domain.CheckID("user_id", userID); err != nil {
		return nil, err
	}
	// One error for a stranger and an unknown user, word for word.
	hidden := domain.NewError(domain.ErrUserNotFound, fmt.Sprintf("no user %q shares a conversation or a group with you", userID))
	if s.contacts == nil {
		return nil, hidden
	}
	shared, err := s.contacts.Shared(ctx, caller, []string{userID})
	if err != nil {
		return nil, err
	}
	if !shared[userID] {
		return nil, hidden
	}
	u, err := s.users.Get(ctx, userID)
	if errors.Is(err, domain.ErrUserNotFound) {
		return nil, hidden // deleted, its conversations kept
	}
	if err != nil {
		return nil, err
	}
	return PublicProfileJSON{UserID: u.ID, Nickname: u.Nickname, Avatar: u.Avatar}, nil
}

// UpdateRequest is the body of PUT /user/update; absent fields stay as they
// are, an empty avatar clears it.
type UpdateRequest struct {
	Nickname     *string              `json:"nickname"`
	Avatar       *string              `json:"avatar"`
	GroupInvites *domain.GroupInvites `json:"group_invites"`
	DMPolicy     *domain.DMPolicy     `json:"dm_policy"`
}

// Validate requires at least one field and applies the field rules.
func (r *UpdateRequest) Validate() error {
	if r.Nickname == nil && r.Avatar == nil && r.GroupInvites == nil && r.DMPolicy == nil {
		return domain.BadField("body", "must set nickname, avatar, group_invites and/or dm_policy")
	}
	return checkProfile(r.Nickname, r.Avatar, r.GroupInvites, r.DMPolicy)
}

// Update changes userID's own profile as req (validated) says and returns
// the updated profile; a nickname goes through the word filter first
// (blocked_word, or masked).
func (s *Service) Update(ctx context.Context, userID string, req UpdateRequest) (ProfileJSON, error) {
	if err := s.filterNickname(req.Nickname); err != nil {
		return ProfileJSON{}, err
	}
	u, err := s.users.Update(ctx, userID, store.UserUpdate{Nickname: req.Nickname, Avatar: req.Avatar, GroupInvites: req.GroupInvites, DMPolicy: req.DMPolicy})
	if err != nil {
		return ProfileJSON{}, err
	}
	if req.DMPolicy != nil {
		s.gate.Forget(userID)
	}
	return profileOf(u), nil
}
