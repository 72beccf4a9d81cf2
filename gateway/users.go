package gateway

import (
	"context"
	"fmt"
	"strings"

	"github.com/cloudwego/hertz/pkg/app"
	"github.com/google/uuid"

	"github.com/nexo-im/nexo/domain"
	"github.com/nexo-im/nexo/gateway/api"
	"github.com/nexo-im/nexo/gateway/auth"
	"github.com/nexo-im/nexo/gateway/wire"
)

// registerRequest is the body of POST /user/register.
type registerRequest struct {
	UserID   string `json:"user_id"`
	Nickname string `json:"nickname"`
	Password string `json:"password"`
	Avatar   string `json:"avatar"`
}

// Validate applies the field rules of docs/openapi.yaml.
func (r *registerRequest) Validate() error {
	if r.UserID != "" && !domain.ValidID(r.UserID) {
		return badUserID("user_id")
	}
	if domain.IsReservedUserID(r.UserID) {
		return domain.BadField("user_id", "%q is reserved (%s); choose another", r.UserID, strings.Join(domain.ReservedUserIDs(), ", "))
	}
	if err := domain.CheckLen("nickname", r.Nickname, 1, domain.MaxNicknameLen); err != nil {
		return err
	}
	if err := checkNewPassword("password", r.Password); err != nil {
		return err
	}
	return domain.CheckLen("avatar", r.Avatar, 0, domain.MaxAvatarLen)
}

// checkNewPassword is the rule for a password being set (registration, a
// change): 8–128 characters and not one of the most common passwords.
func checkNewPassword(field, password string) error {
	if err := domain.CheckLen(field, password, domain.MinPasswordLen, domain.MaxPasswordLen); err != nil {
		return err
	}
	if auth.IsCommonPassword(password) {
		return domain.BadField(field, "is one of the %d most common passwords; choose another", auth.CommonPasswordCount)
	}
	return nil
}

func badUserID(field string) error {
	return domain.BadField(field, "must be 1–%d characters of A-Z a-z 0-9 _ -", domain.MaxIDLen)
}

// profile is a user as the API shows it; the password hash never leaves.
type profile struct {
	UserID    string `json:"user_id"`
	Nickname  string `json:"nickname"`
	Avatar    string `json:"avatar"`
	CreatedAt int64  `json:"created_at"`
	UpdatedAt int64  `json:"updated_at"`
}

func profileOf(u domain.User) profile {
	return profile{UserID: u.ID, Nickname: u.Nickname, Avatar: u.Avatar, CreatedAt: u.CreatedAt, UpdatedAt: u.UpdatedAt}
}

// publicProfile is what anyone signed in sees of another user: the fields
// a chat shows beside a message. When an account was created or last
// changed is its owner's business (docs/security.md).
type publicProfile struct {
	UserID   string `json:"user_id"`
	Nickname string `json:"nickname"`
	Avatar   string `json:"avatar"`
}

// register handles POST /user/register → {user_id}; the ID is a UUIDv7
// when the body has none. A taken ID is 409 user_exists.
func (s *Server) register(ctx context.Context, c *app.RequestContext) {
	if s.deps.RegistrationClosed {
		api.WriteError(ctx, c, s.log, wire.NewError(wire.ReasonForbidden, "registration is closed (auth.registration): users come from the app's server API"))
		return
	}
	var req registerRequest
	if err := api.BindJSON(c, s.deps.HTTP.MaxBodyBytes, &req); err != nil {
		api.WriteError(ctx, c, s.log, err)
		return
	}
	if req.UserID == "" {
		id, err := uuid.NewV7()
		if err != nil {
			api.WriteError(ctx, c, s.log, fmt.Errorf("user id: %w", err))
			return
		}
		req.UserID = id.String()
	}
	if err := s.allow(ctx, limitRegisterIP, s.clientIP(c), s.deps.Limits.RegisterIP); err != nil {
		api.WriteError(ctx, c, s.log, err)
		return
	}
	var hash string
	err := s.hashes.do(ctx, func() (err error) {
		hash, err = s.deps.Passwords.Hash(req.Password)
		return err
	})
	if err != nil {
		api.WriteError(ctx, c, s.log, err)
		return
	}
	u, err := s.deps.Users.Create(ctx, domain.User{ID: req.UserID, Nickname: req.Nickname, Avatar: req.Avatar, PasswordHash: hash})
	if err != nil {
		api.WriteError(ctx, c, s.log, err)
		return
	}
	api.WriteOK(c, map[string]string{"user_id": u.ID})
}

// userInfo handles GET /user/info?user_id= → profile; without user_id (or
// with the caller's own) it is the caller's full profile, for another user
// only the public fields (publicProfile).
func (s *Server) userInfo(ctx context.Context, c *app.RequestContext) {
	claims, _ := auth.ClaimsOf(c)
	id := string(c.Query("user_id"))
	if id == "" {
		id = claims.UserID
	}
	if !domain.ValidID(id) {
		api.WriteError(ctx, c, s.log, badUserID("user_id"))
		return
	}
	u, err := s.deps.Users.Get(ctx, id)
	if err != nil {
		api.WriteError(ctx, c, s.log, err)
		return
	}
	if id != claims.UserID {
		api.WriteOK(c, publicProfile{UserID: u.ID, Nickname: u.Nickname, Avatar: u.Avatar})
		return
	}
	api.WriteOK(c, profileOf(u))
}

// updateRequest is the body of PUT /user/update; absent fields stay as they
// are, an empty avatar clears it.
type updateRequest struct {
	Nickname *string `json:"nickname"`
	Avatar   *string `json:"avatar"`
}

// Validate requires at least one field and applies the length rules.
func (r *updateRequest) Validate() error {
	if r.Nickname == nil && r.Avatar == nil {
		return domain.BadField("body", "must set nickname and/or avatar")
	}
	if r.Nickname != nil {
		if err := domain.CheckLen("nickname", *r.Nickname, 1, domain.MaxNicknameLen); err != nil {
			return err
		}
	}
	if r.Avatar != nil {
		return domain.CheckLen("avatar", *r.Avatar, 0, domain.MaxAvatarLen)
	}
	return nil
}

// updateUser handles PUT /user/update: the caller's own profile → the
// updated profile.
func (s *Server) updateUser(ctx context.Context, c *app.RequestContext) {
	claims, _ := auth.ClaimsOf(c)
	var req updateRequest
	if err := api.BindJSON(c, s.deps.HTTP.MaxBodyBytes, &req); err != nil {
		api.WriteError(ctx, c, s.log, err)
		return
	}
	u, err := s.deps.Users.Update(ctx, claims.UserID, req.Nickname, req.Avatar)
	if err != nil {
		api.WriteError(ctx, c, s.log, err)
		return
	}
	api.WriteOK(c, profileOf(u))
}
