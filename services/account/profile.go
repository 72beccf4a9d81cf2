package account

import (
	"context"

	"github.com/nexo-im/nexo/domain"
)

// ProfileJSON is a user as their owner sees them; the password hash never
// leaves.
type ProfileJSON struct {
	UserID    string `json:"user_id"`
	Nickname  string `json:"nickname"`
	Avatar    string `json:"avatar"`
	CreatedAt int64  `json:"created_at"`
	UpdatedAt int64  `json:"updated_at"`
}

func profileOf(u domain.User) ProfileJSON {
	return ProfileJSON{UserID: u.ID, Nickname: u.Nickname, Avatar: u.Avatar, CreatedAt: u.CreatedAt, UpdatedAt: u.UpdatedAt}
}

// PublicProfileJSON is what anyone signed in sees of another user: the
// fields a chat shows beside a message. When an account was created or
// last changed is its owner's business (docs/security.md).
type PublicProfileJSON struct {
	UserID   string `json:"user_id"`
	Nickname string `json:"nickname"`
	Avatar   string `json:"avatar"`
}

// Info returns userID's profile as caller may see it: with userID "" or
// the caller's own, the full ProfileJSON; for another user, the
// PublicProfileJSON. An unknown user is domain.ErrUserNotFound.
func (s *Service) Info(ctx context.Context, caller, userID string) (any, error) {
	if userID == "" {
		userID = caller
	}
	if err := domain.CheckID("user_id", userID); err != nil {
		return nil, err
	}
	u, err := s.users.Get(ctx, userID)
	if err != nil {
		return nil, err
	}
	if userID != caller {
		return PublicProfileJSON{UserID: u.ID, Nickname: u.Nickname, Avatar: u.Avatar}, nil
	}
	return profileOf(u), nil
}

// UpdateRequest is the body of PUT /user/update; absent fields stay as they
// are, an empty avatar clears it.
type UpdateRequest struct {
	Nickname *string `json:"nickname"`
	Avatar   *string `json:"avatar"`
}

// Validate requires at least one field and applies the length rules.
func (r *UpdateRequest) Validate() error {
	if r.Nickname == nil && r.Avatar == nil {
		return domain.BadField("body", "must set nickname and/or avatar")
	}
	return checkProfile(r.Nickname, r.Avatar)
}

// Update changes userID's own profile as req (validated) says and returns
// the updated profile.
func (s *Service) Update(ctx context.Context, userID string, req UpdateRequest) (ProfileJSON, error) {
	u, err := s.users.Update(ctx, userID, req.Nickname, req.Avatar)
	if err != nil {
		return ProfileJSON{}, err
	}
	return profileOf(u), nil
}
