package gateway

import (
	"context"
	"errors"

	"github.com/cloudwego/hertz/pkg/app"

	"github.com/nexo-im/nexo/domain"
	"github.com/nexo-im/nexo/gateway/api"
	"github.com/nexo-im/nexo/gateway/auth"
)

// loginRequest is the body of POST /auth/login.
type loginRequest struct {
	UserID     string `json:"user_id"`
	Password   string `json:"password"`
	PlatformID int    `json:"platform_id"`
}

// Validate checks the shape only; whether the user exists and the password
// matches is bad_credentials, the same answer for both.
func (r *loginRequest) Validate() error {
	if r.UserID == "" {
		return domain.BadField("user_id", "is required")
	}
	if !domain.ValidID(r.UserID) {
		return badUserID("user_id")
	}
	if err := domain.CheckLen("password", r.Password, 1, domain.MaxPasswordLen); err != nil {
		return err
	}
	if !domain.Platform(r.PlatformID).Valid() {
		return domain.BadField("platform_id", "must be an OpenIM platform number 1–10 (1 iOS, 2 Android, 3 Windows, 4 macOS, 5 Web, 6 mini web, 7 Linux, 8 Android pad, 9 iPad, 10 admin)")
	}
	return nil
}

// tokenResponse answers login and refresh; expire_at is Unix milliseconds.
type tokenResponse struct {
	Token    string `json:"token"`
	ExpireAt int64  `json:"expire_at"`
}

func tokenResponseOf(t auth.Token) tokenResponse {
	return tokenResponse{Token: t.Token, ExpireAt: t.ExpiresAt.UnixMilli()}
}

// login handles POST /auth/login → {token, expire_at}. The token replaces
// (revokes) the user's previous token on that platform. An unknown user and
// a wrong password are both 401 bad_credentials and take the same time.
func (s *Server) login(ctx context.Context, c *app.RequestContext) {
	var req loginRequest
	if err := api.BindJSON(c, s.deps.HTTP.MaxBodyBytes, &req); err != nil {
		api.WriteError(ctx, c, s.log, err)
		return
	}
	// Limits before any hashing: per client IP (every attempt) and per
	// account (attempts since its last success), each with its backoff
	// after failures, shared by every instance.
	ip := s.clientIP(c)
	if err := s.allowLogin(ctx, limitLoginIP, ip, s.deps.Limits.LoginIP); err != nil {
		api.WriteError(ctx, c, s.log, err)
		return
	}
	if err := s.allowLogin(ctx, limitLoginAccount, req.UserID, s.deps.Limits.LoginAccount); err != nil {
		api.WriteError(ctx, c, s.log, err)
		return
	}
	u, err := s.deps.Users.Get(ctx, req.UserID)
	if err != nil && !errors.Is(err, domain.ErrUserNotFound) {
		api.WriteError(ctx, c, s.log, err)
		return
	}
	// u.PasswordHash is "" for an unknown user: Check then burns the same
	// bcrypt time and fails with ErrBadCredentials.
	err = s.hashes.do(ctx, func() error { return s.deps.Passwords.Check(u.PasswordHash, req.Password) })
	if err != nil {
		if errors.Is(err, domain.ErrBadCredentials) {
			s.loginFailed(ctx, ip, req.UserID)
		}
		api.WriteError(ctx, c, s.log, err)
		return
	}
	if u.Disabled {
		api.WriteError(ctx, c, s.log, domain.ErrUserDisabled)
		return
	}
	s.resetLoginAccount(ctx, u.ID)
	tok, err := s.deps.Issuer.Issue(ctx, u.ID, req.PlatformID)
	if err != nil {
		api.WriteError(ctx, c, s.log, err)
		return
	}
	if tok.Replaced != "" && s.deps.OnLogout != nil {
		// The older login's live sessions end now (session_invalid).
		s.deps.OnLogout(u.ID, req.PlatformID, tok.Replaced)
	}
	api.WriteOK(c, tokenResponseOf(tok))
}

// refresh handles POST /auth/refresh: a new token for the caller's user and
// platform; the presented token is revoked and OnLogout is told, so live
// sessions opened with it close (session_invalid) on every instance. A
// token refreshed twice is token_revoked the second time.
func (s *Server) refresh(ctx context.Context, c *app.RequestContext) {
	claims, _ := auth.ClaimsOf(c)
	tok, err := s.deps.Issuer.Refresh(ctx, claims)
	if err != nil {
		api.WriteError(ctx, c, s.log, err)
		return
	}
	if s.deps.OnLogout != nil {
		s.deps.OnLogout(claims.UserID, claims.PlatformID, claims.JTI)
	}
	api.WriteOK(c, tokenResponseOf(tok))
}

// logout handles POST /auth/logout: the presented token is revoked (refused
// from now on by HTTP and WebSocket) and OnLogout is told, so live sessions
// on it close.
func (s *Server) logout(ctx context.Context, c *app.RequestContext) {
	claims, _ := auth.ClaimsOf(c)
	if err := s.deps.Issuer.Revoke(ctx, claims); err != nil {
		api.WriteError(ctx, c, s.log, err)
		return
	}
	if s.deps.OnLogout != nil {
		s.deps.OnLogout(claims.UserID, claims.PlatformID, claims.JTI)
	}
	api.WriteOK(c, struct{}{})
}
