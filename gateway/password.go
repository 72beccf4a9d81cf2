package gateway

import (
	"context"

	"github.com/cloudwego/hertz/pkg/app"

	"github.com/nexo-im/nexo/domain"
	"github.com/nexo-im/nexo/gateway/api"
	"github.com/nexo-im/nexo/gateway/auth"
)

// passwordRequest is the body of POST /user/password.
type passwordRequest struct {
	OldPassword string `json:"old_password"`
	NewPassword string `json:"new_password"`
}

// Validate applies the rules of a new password; the old one only needs to
// be present (it is checked against the stored hash).
func (r *passwordRequest) Validate() error {
	if err := domain.CheckLen("old_password", r.OldPassword, 1, 512); err != nil {
		return err
	}
	if err := checkNewPassword("new_password", r.NewPassword); err != nil {
		return err
	}
	if r.NewPassword == r.OldPassword {
		return domain.BadField("new_password", "must differ from old_password")
	}
	return nil
}

// revokedJSON answers the routes that revoke tokens: how many platforms'
// Nexo-issued tokens were revoked (app-signed tokens are revoked by a
// per-user floor, so there is nothing to count).
type revokedJSON struct {
	Revoked int `json:"revoked"`
}

// changePassword handles POST /user/password: with the right old password
// the hash is replaced and every other token of the user is revoked —
// Nexo's on all other platforms, and every app-signed one issued until now
// (auth.external_jwt) except the caller's — and the live sessions on the
// other platforms are closed at once (other app-signed sessions on the
// caller's platform at their next token check, ws.ping_interval). The
// caller's own token stays valid. A wrong old password is 401
// bad_credentials.
func (s *Server) changePassword(ctx context.Context, c *app.RequestContext) {
	claims, _ := auth.ClaimsOf(c)
	var req passwordRequest
	if err := api.BindJSON(c, s.deps.HTTP.MaxBodyBytes, &req); err != nil {
		api.WriteError(ctx, c, s.log, err)
		return
	}
	u, err := s.deps.Users.Get(ctx, claims.UserID)
	if err != nil {
		api.WriteError(ctx, c, s.log, err)
		return
	}
	if err := s.deps.Passwords.Check(u.PasswordHash, req.OldPassword); err != nil {
		api.WriteError(ctx, c, s.log, err)
		return
	}
	hash, err := s.deps.Passwords.Hash(req.NewPassword)
	if err != nil {
		api.WriteError(ctx, c, s.log, err)
		return
	}
	if err := s.deps.Users.SetPassword(ctx, claims.UserID, hash); err != nil {
		api.WriteError(ctx, c, s.log, err)
		return
	}
	revoked, err := s.deps.Issuer.RevokeAll(ctx, claims.UserID, claims)
	if s.deps.OnLogout != nil {
		// Every session on another platform ends, whatever its token (an
		// app-signed one is revoked too); on the caller's platform only
		// those on the revoked Nexo token (an app-signed caller's), the
		// others at their next token check.
		for p := domain.PlatformIOS; p <= domain.PlatformAdmin; p++ {
			if int(p) != claims.PlatformID {
				s.deps.OnLogout(claims.UserID, int(p), "")
			}
		}
		if jti, ok := revoked[claims.PlatformID]; ok {
			s.deps.OnLogout(claims.UserID, claims.PlatformID, jti)
		}
	}
	if err != nil {
		api.WriteError(ctx, c, s.log, err)
		return
	}
	api.WriteOK(c, revokedJSON{Revoked: len(revoked)})
}

// logoutAll handles POST /auth/logout_all: every token of the caller is
// revoked, the presented one included — Nexo's on every platform and every
// app-signed one issued until now — and every live session of the user is
// closed (OnLogout with platform 0 and jti "": all of them, on every
// instance).
func (s *Server) logoutAll(ctx context.Context, c *app.RequestContext) {
	claims, _ := auth.ClaimsOf(c)
	revoked, err := s.deps.Issuer.RevokeAll(ctx, claims.UserID, auth.Claims{})
	if s.deps.OnLogout != nil {
		s.deps.OnLogout(claims.UserID, 0, "")
	}
	if err != nil {
		api.WriteError(ctx, c, s.log, err)
		return
	}
	api.WriteOK(c, revokedJSON{Revoked: len(revoked)})
}
