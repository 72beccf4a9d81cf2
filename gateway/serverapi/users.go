package serverapi

import (
	"context"
	"fmt"
	"unicode/utf8"

	"github.com/cloudwego/hertz/pkg/app"

	"github.com/nexo-im/nexo/domain"
	"github.com/nexo-im/nexo/gateway/api"
)

// UserJSON is a user as the server API shows it.
type UserJSON struct {
	UserID    string `json:"user_id"`
	Nickname  string `json:"nickname"`
	Avatar    string `json:"avatar"`
	Disabled  bool   `json:"disabled"`
	CreatedAt int64  `json:"created_at"`
	UpdatedAt int64  `json:"updated_at"`
}

func userJSON(u domain.User) UserJSON {
	return UserJSON{UserID: u.ID, Nickname: u.Nickname, Avatar: u.Avatar, Disabled: u.Disabled, CreatedAt: u.CreatedAt, UpdatedAt: u.UpdatedAt}
}

// CreateUserRequest is the body of POST /api/user/create. Password is
// optional: a user without one can only get tokens from the server API
// (or sign in with an app-signed JWT).
type CreateUserRequest struct {
	UserID   string `json:"user_id"`
	Nickname string `json:"nickname"`
	Avatar   string `json:"avatar"`
	Password string `json:"password"`
}

// Validate checks the fields' shapes.
func (r *CreateUserRequest) Validate() error {
	if !domain.ValidID(r.UserID) {
		return badUserID("user_id")
	}
	if err := checkLen("nickname", r.Nickname, 1, domain.MaxNicknameLen); err != nil {
		return err
	}
	if err := checkLen("avatar", r.Avatar, 0, domain.MaxAvatarLen); err != nil {
		return err
	}
	if r.Password != "" {
		return checkLen("password", r.Password, domain.MinPasswordLen, domain.MaxPasswordLen)
	}
	return nil
}

// UpdateUserRequest is the body of POST /api/user/update; absent fields stay.
type UpdateUserRequest struct {
	UserID   string  `json:"user_id"`
	Nickname *string `json:"nickname"`
	Avatar   *string `json:"avatar"`
}

// Validate requires user_id and checks the given fields.
func (r *UpdateUserRequest) Validate() error {
	if !domain.ValidID(r.UserID) {
		return badUserID("user_id")
	}
	if r.Nickname != nil {
		if err := checkLen("nickname", *r.Nickname, 1, domain.MaxNicknameLen); err != nil {
			return err
		}
	}
	if r.Avatar != nil {
		return checkLen("avatar", *r.Avatar, 0, domain.MaxAvatarLen)
	}
	return nil
}

// UserRequest is the body of the routes that name one user.
type UserRequest struct {
	UserID string `json:"user_id"`
}

// Validate requires a well-formed user_id.
func (r *UserRequest) Validate() error {
	if !domain.ValidID(r.UserID) {
		return badUserID("user_id")
	}
	return nil
}

func badUserID(field string) error {
	return domain.BadField(field, "is required: 1–%d characters of A-Z a-z 0-9 _ -", domain.MaxIDLen)
}

func checkLen(field, v string, min, max int) error {
	n := utf8.RuneCountInString(v)
	switch {
	case n == 0 && min > 0:
		return domain.BadField(field, "is required")
	case n < min || n > max:
		return domain.BadField(field, "must be %d–%d characters (got %d)", min, max, n)
	}
	return nil
}

// bind decodes the body strictly (api.BindJSON) into a T.
func bind[T any](a *API, ctx context.Context, c *app.RequestContext) (T, bool) {
	var req T
	if err := api.BindJSON(c, a.d.MaxBody, &req); err != nil {
		api.WriteError(ctx, c, a.d.Log, err)
		return req, false
	}
	return req, true
}

// createUser handles POST /api/user/create → the user; 409 user_exists.
func (a *API) createUser(ctx context.Context, c *app.RequestContext) {
	req, ok := bind[CreateUserRequest](a, ctx, c)
	if !ok {
		return
	}
	u := domain.User{ID: req.UserID, Nickname: req.Nickname, Avatar: req.Avatar}
	if req.Password != "" {
		hash, err := a.d.Passwords.Hash(req.Password)
		if err != nil {
			a.write(ctx, c, nil, err)
			return
		}
		u.PasswordHash = hash
	}
	created, err := a.d.Users.Create(ctx, u)
	if err == nil {
		// A re-created ID must not inherit the old account's disabled state
		// or accept tokens issued to it before.
		err = a.d.Tokens.SetDisabled(ctx, created.ID, false)
	}
	a.write(ctx, c, userJSON(created), err)
}

// updateUser handles POST /api/user/update → the user.
func (a *API) updateUser(ctx context.Context, c *app.RequestContext) {
	req, ok := bind[UpdateUserRequest](a, ctx, c)
	if !ok {
		return
	}
	u, err := a.d.Users.Update(ctx, req.UserID, req.Nickname, req.Avatar)
	a.write(ctx, c, userJSON(u), err)
}

// getUser handles GET /api/user/get?user_id= → the user.
func (a *API) getUser(ctx context.Context, c *app.RequestContext) {
	id := string(c.Query("user_id"))
	if !domain.ValidID(id) {
		a.write(ctx, c, nil, badUserID("user_id"))
		return
	}
	u, err := a.d.Users.Get(ctx, id)
	a.write(ctx, c, userJSON(u), err)
}

// disableUser handles POST /api/user/disable: the user can no longer log
// in or get tokens, every token of theirs is refused from now on by every
// instance (the token store in Redis), and their live sessions close.
func (a *API) disableUser(ctx context.Context, c *app.RequestContext) {
	a.setDisabled(ctx, c, true)
}

// enableUser handles POST /api/user/enable. Tokens issued before stay
// refused: issue new ones.
func (a *API) enableUser(ctx context.Context, c *app.RequestContext) {
	a.setDisabled(ctx, c, false)
}

func (a *API) setDisabled(ctx context.Context, c *app.RequestContext, disabled bool) {
	req, ok := bind[UserRequest](a, ctx, c)
	if !ok {
		return
	}
	u, err := a.d.Users.SetDisabled(ctx, req.UserID, disabled)
	if err != nil {
		a.write(ctx, c, nil, err)
		return
	}
	// Redis first: from here on no instance accepts the user's tokens,
	// even before its sessions are told to close.
	if err := a.d.Tokens.SetDisabled(ctx, req.UserID, disabled); err != nil {
		a.write(ctx, c, nil, fmt.Errorf("%w: %v", domain.ErrServerBusy, err))
		return
	}
	if disabled {
		a.d.Sessions.Disconnect(req.UserID, 0, "")
	}
	a.write(ctx, c, userJSON(u), nil)
}

// deleteUser handles POST /api/user/delete: the account is removed, its
// tokens revoked and its sessions closed. Messages and memberships stay.
func (a *API) deleteUser(ctx context.Context, c *app.RequestContext) {
	req, ok := bind[UserRequest](a, ctx, c)
	if !ok {
		return
	}
	if err := a.d.Users.Delete(ctx, req.UserID); err != nil {
		a.write(ctx, c, nil, err)
		return
	}
	if err := a.d.Tokens.RevokeUser(ctx, req.UserID); err != nil {
		a.write(ctx, c, nil, fmt.Errorf("%w: %v", domain.ErrServerBusy, err))
		return
	}
	a.d.Sessions.Disconnect(req.UserID, 0, "")
	a.write(ctx, c, struct{}{}, nil)
}

// TokenRequest is the body of POST /api/token.
type TokenRequest struct {
	UserID     string `json:"user_id"`
	PlatformID int    `json:"platform_id"`
}

// Validate requires a user ID and a platform 1–10.
func (r *TokenRequest) Validate() error {
	if !domain.ValidID(r.UserID) {
		return badUserID("user_id")
	}
	if !domain.Platform(r.PlatformID).Valid() {
		return domain.BadField("platform_id", "must be an OpenIM platform number 1–10")
	}
	return nil
}

// TokenJSON answers POST /api/token (as /auth/login does).
type TokenJSON struct {
	Token    string `json:"token"`
	ExpireAt int64  `json:"expire_at"`
}

// issueToken handles POST /api/token: the app's "log this user in to
// chat". The token replaces the user's previous token on that platform, as
// a login does (its sessions close). 404 user_not_found, 403 user_disabled.
func (a *API) issueToken(ctx context.Context, c *app.RequestContext) {
	req, ok := bind[TokenRequest](a, ctx, c)
	if !ok {
		return
	}
	u, err := a.d.Users.Get(ctx, req.UserID)
	if err != nil {
		a.write(ctx, c, nil, err)
		return
	}
	if u.Disabled {
		a.write(ctx, c, nil, domain.ErrUserDisabled)
		return
	}
	tok, err := a.d.Issuer.Issue(ctx, u.ID, req.PlatformID)
	if err != nil {
		a.write(ctx, c, nil, err)
		return
	}
	if tok.Replaced != "" {
		a.d.Sessions.Disconnect(u.ID, req.PlatformID, tok.Replaced)
	}
	a.write(ctx, c, TokenJSON{Token: tok.Token, ExpireAt: tok.ExpiresAt.UnixMilli()}, nil)
}

// revokeTokens handles POST /api/token/revoke: every token of the user
// (Nexo's and app-signed ones issued before now) is refused from now on
// and the user's sessions close. The user may get new tokens.
func (a *API) revokeTokens(ctx context.Context, c *app.RequestContext) {
	req, ok := bind[UserRequest](a, ctx, c)
	if !ok {
		return
	}
	if err := a.d.Tokens.RevokeUser(ctx, req.UserID); err != nil {
		a.write(ctx, c, nil, fmt.Errorf("%w: %v", domain.ErrServerBusy, err))
		return
	}
	a.d.Sessions.Disconnect(req.UserID, 0, "")
	a.write(ctx, c, struct{}{}, nil)
}
