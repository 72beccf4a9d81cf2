package account

import (
	"context"
	"errors"
	"fmt"

	"github.com/nexo-im/nexo/domain"
)

// LoginRequest is the body of POST /auth/login.
type LoginRequest struct {
	UserID     string `json:"user_id"`
	Password   string `json:"password"`
	PlatformID int    `json:"platform_id"`
}

// Validate checks the shape only; whether the user exists and the password
// matches is bad_credentials, the same answer for both.
func (r *LoginRequest) Validate() error {
	if err := domain.CheckID("user_id", r.UserID); err != nil {
		return err
	}
	if err := domain.CheckLen("password", r.Password, 1, domain.MaxPasswordLen); err != nil {
		return err
	}
	return checkPlatform("platform_id", r.PlatformID)
}

// Login checks req's password for a client at ip and returns a token that
// replaces (revokes) the user's previous token on that platform; the
// sessions on that one close. An unknown user and a wrong password are
// both domain.ErrBadCredentials and take the same time; a disabled user is
// domain.ErrUserDisabled.
func (s *Service) Login(ctx context.Context, ip string, req LoginRequest) (TokenJSON, error) {
	// Limits before any hashing: per client IP (every attempt) and per
	// account (attempts since its last success), each with its backoff
	// after failures, shared by every instance.
	if s.limits != nil {
		if err := s.limits.AllowLogin(ctx, ip, req.UserID); err != nil {
			return TokenJSON{}, err
		}
	}
	u, err := s.users.Get(ctx, req.UserID)
	if err != nil && !errors.Is(err, domain.ErrUserNotFound) {
		return TokenJSON{}, err
	}
	// u.PasswordHash is "" for an unknown user: Check then burns the same
	// bcrypt time and fails with ErrBadCredentials.
	err = s.hashes.do(ctx, func() error { return s.passwords.Check(u.PasswordHash, req.Password) })
	if err != nil {
		if errors.Is(err, domain.ErrBadCredentials) && s.limits != nil {
			s.limits.LoginFailed(ctx, ip, req.UserID)
		}
		return TokenJSON{}, err
	}
	if u.Disabled {
		return TokenJSON{}, domain.ErrUserDisabled
	}
	if s.limits != nil {
		s.limits.LoginSucceeded(ctx, u.ID)
	}
	return s.issue(ctx, u, req.PlatformID)
}

// Refresh returns a new token for c's user and platform and revokes c's
// token; the sessions opened with it close on every instance. A token
// refreshed twice is domain.ErrTokenRevoked the second time.
func (s *Service) Refresh(ctx context.Context, c Caller) (TokenJSON, error) {
	tok, err := s.tokens.Refresh(ctx, c)
	if err != nil {
		return TokenJSON{}, err
	}
	s.sessions.Disconnect(c.UserID, c.PlatformID, c.JTI)
	return tokenJSON(tok), nil
}

// Logout revokes c's token (refused from now on by HTTP and WebSocket) and
// closes the sessions opened with it.
func (s *Service) Logout(ctx context.Context, c Caller) error {
	if err := s.tokens.Revoke(ctx, c); err != nil {
		return err
	}
	s.sessions.Disconnect(c.UserID, c.PlatformID, c.JTI)
	if s.devices != nil {
		// A failure is reported: the client retries the logout, which
		// revokes nothing new and forgets the devices then.
		if err := s.devices.LoggedOut(ctx, c.UserID, c.PlatformID); err != nil {
			return fmt.Errorf("%w: forget push devices: %v", domain.ErrServerBusy, err)
		}
	}
	return nil
}
