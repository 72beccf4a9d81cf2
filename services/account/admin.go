package account

import (
	"context"
	"fmt"

	"github.com/nexo-im/nexo/domain"
	"github.com/nexo-im/nexo/store"
)

// The operations of this file are the app backend's (the server API,
// /api/user/* and /api/token*): they act on any user, with the same field
// rules as the user routes.

// UserJSON is a user as the server API shows it.
type UserJSON struct {
	UserID    string `json:"user_id"`
	Nickname  string `json:"nickname"`
	Avatar    string `json:"avatar"`
	Disabled  bool   `json:"disabled"`
	CreatedAt int64  `json:"created_at"`
	UpdatedAt int64  `json:"updated_at"`
	// GroupInvites is who may add the user to groups (ProfileJSON).
	GroupInvites domain.GroupInvites `json:"group_invites"`
	// DMPolicy is who may write to the user in a single chat (ProfileJSON).
	DMPolicy domain.DMPolicy `json:"dm_policy"`
}

func userJSON(u domain.User) UserJSON {
	return UserJSON{UserID: u.ID, Nickname: u.Nickname, Avatar: u.Avatar, Disabled: u.Disabled, CreatedAt: u.CreatedAt, UpdatedAt: u.UpdatedAt,
		GroupInvites: u.GroupInvites.OrDefault(), DMPolicy: u.DMPolicy.OrDefault()}
}

// CreateUserRequest is the body of POST /api/user/create. Password is
// optional: a user without one can only get tokens from the server API
// (or sign in with an app-signed JWT).
type CreateUserRequest struct {
	UserID   string `json:"user_id"`
	Nickname string `json:"nickname"`
	Avatar   string `json:"avatar"`
	Password string `json:"password"`
	// GroupInvites is optional: everyone when absent.
	GroupInvites *domain.GroupInvites `json:"group_invites"`
	// DMPolicy is optional: everyone when absent.
	DMPolicy *domain.DMPolicy `json:"dm_policy"`
}

// Validate checks the fields' shapes.
func (r *CreateUserRequest) Validate() error {
	if err := domain.CheckID("user_id", r.UserID); err != nil {
		return err
	}
	if err := checkProfile(&r.Nickname, &r.Avatar, r.GroupInvites, r.DMPolicy); err != nil {
		return err
	}
	if r.Password != "" {
		return domain.CheckLen("password", r.Password, domain.MinPasswordLen, domain.MaxPasswordLen)
	}
	return nil
}

// UpdateUserRequest is the body of POST /api/user/update; absent fields
// stay.
type UpdateUserRequest struct {
	UserID       string               `json:"user_id"`
	Nickname     *string              `json:"nickname"`
	Avatar       *string              `json:"avatar"`
	GroupInvites *domain.GroupInvites `json:"group_invites"`
	DMPolicy     *domain.DMPolicy     `json:"dm_policy"`
}

// Validate requires user_id and checks the given fields.
func (r *UpdateUserRequest) Validate() error {
	if err := domain.CheckID("user_id", r.UserID); err != nil {
		return err
	}
	return checkProfile(r.Nickname, r.Avatar, r.GroupInvites, r.DMPolicy)
}

// UserRequest is the body of the server API routes that name one user.
type UserRequest struct {
	UserID string `json:"user_id"`
}

// Validate requires a well-formed user_id.
func (r *UserRequest) Validate() error {
	return domain.CheckID("user_id", r.UserID)
}

// TokenRequest is the body of POST /api/token.
type TokenRequest struct {
	UserID     string `json:"user_id"`
	PlatformID int    `json:"platform_id"`
}

// Validate requires a user ID and a platform 1–10.
func (r *TokenRequest) Validate() error {
	if err := domain.CheckID("user_id", r.UserID); err != nil {
		return err
	}
	return checkPlatform("platform_id", r.PlatformID)
}

// CreateUser creates the user of req (validated) and returns it;
// domain.ErrUserExists for a taken ID. A re-created ID starts enabled and
// refuses the tokens issued to the account it replaces.
func (s *Service) CreateUser(ctx context.Context, req CreateUserRequest) (UserJSON, error) {
	u := domain.User{ID: req.UserID, Nickname: req.Nickname, Avatar: req.Avatar}
	if req.GroupInvites != nil {
		u.GroupInvites = *req.GroupInvites
	}
	if req.DMPolicy != nil {
		u.DMPolicy = *req.DMPolicy
	}
	if req.Password != "" {
		hash, err := s.passwords.Hash(req.Password)
		if err != nil {
			return UserJSON{}, err
		}
		u.PasswordHash = hash
	}
	created, err := s.users.Create(ctx, u)
	if err != nil {
		return UserJSON{}, err
	}
	if err := s.store.SetDisabled(ctx, created.ID, false); err != nil {
		return UserJSON{}, err
	}
	return userJSON(created), nil
}

// UpdateUser changes req.UserID's profile as req (validated) says and
// returns the user.
func (s *Service) UpdateUser(ctx context.Context, req UpdateUserRequest) (UserJSON, error) {
	u, err := s.users.Update(ctx, req.UserID, store.UserUpdate{Nickname: req.Nickname, Avatar: req.Avatar, GroupInvites: req.GroupInvites, DMPolicy: req.DMPolicy})
	if err != nil {
		return UserJSON{}, err
	}
	if req.DMPolicy != nil {
		s.gate.Forget(req.UserID)
	}
	return userJSON(u), nil
}

// GetUser returns the user userID; a malformed ID is bad_request, an
// unknown one domain.ErrUserNotFound.
func (s *Service) GetUser(ctx context.Context, userID string) (UserJSON, error) {
	if err := domain.CheckID("user_id", userID); err != nil {
		return UserJSON{}, err
	}
	u, err := s.users.Get(ctx, userID)
	if err != nil {
		return UserJSON{}, err
	}
	return userJSON(u), nil
}

// SetDisabled disables or enables userID. A disabled user can no longer
// log in or get tokens, every token of theirs is refused from now on by
// every instance and their live sessions close. Enabling does not revive
// the tokens issued before: new ones must be issued.
func (s *Service) SetDisabled(ctx context.Context, userID string, disabled bool) (UserJSON, error) {
	u, err := s.users.SetDisabled(ctx, userID, disabled)
	if err != nil {
		return UserJSON{}, err
	}
	// The token store first: from here on no instance accepts the user's
	// tokens, even before its sessions are told to close.
	if err := s.store.SetDisabled(ctx, userID, disabled); err != nil {
		return UserJSON{}, fmt.Errorf("%w: %v", domain.ErrServerBusy, err)
	}
	if disabled {
		s.sessions.Disconnect(userID, 0, "")
	}
	return userJSON(u), nil
}

// DeleteUser removes userID's account, revokes their tokens and closes
// their sessions. Their messages and memberships stay.
func (s *Service) DeleteUser(ctx context.Context, userID string) error {
	if err := s.users.Delete(ctx, userID); err != nil {
		return err
	}
	if s.devices != nil {
		if err := s.devices.ForgetUser(ctx, userID); err != nil {
			return fmt.Errorf("%w: forget push devices: %v", domain.ErrServerBusy, err)
		}
	}
	return s.RevokeTokens(ctx, userID)
}

// IssueToken is the app's "log this user in to chat": a token that
// replaces the user's previous token on that platform, as a login does
// (its sessions close). domain.ErrUserNotFound, domain.ErrUserDisabled.
func (s *Service) IssueToken(ctx context.Context, req TokenRequest) (TokenJSON, error) {
	u, err := s.users.Get(ctx, req.UserID)
	if err != nil {
		return TokenJSON{}, err
	}
	return s.issue(ctx, u, req.PlatformID)
}

// RevokeTokens refuses from now on every token of userID (Nexo's and
// app-signed ones issued before now) and closes the user's sessions. The
// user may get new tokens.
func (s *Service) RevokeTokens(ctx context.Context, userID string) error {
	if err := s.store.RevokeUser(ctx, userID); err != nil {
		return fmt.Errorf("%w: %v", domain.ErrServerBusy, err)
	}
	s.sessions.Disconnect(userID, 0, "")
	return nil
}
