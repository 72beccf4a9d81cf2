package account

import (
	"context"
	"strings"
	"sync"

	"github.com/trustelem/zxcvbn/frequency"

	"github.com/nexo-im/nexo/domain"
)

// PasswordRequest is the body of POST /user/password.
type PasswordRequest struct {
	OldPassword string `json:"old_password"`
	NewPassword string `json:"new_password"`
}

// Validate applies the rules of a new password; the old one only needs to
// be present (it is checked against the stored hash).
func (r *PasswordRequest) Validate() error {
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

// checkNewPassword is the rule for a password being set (registration, a
// change): 8–128 characters and not one of the most common passwords.
func checkNewPassword(field, password string) error {
	if err := domain.CheckLen(field, password, domain.MinPasswordLen, domain.MaxPasswordLen); err != nil {
		return err
	}
	if isCommonPassword(password) {
		return domain.BadField(field, "is one of the %d most common passwords; choose another", commonPasswordCount)
	}
	return nil
}

// commonPasswordCount is how many of the most common passwords are
// refused: the top of zxcvbn's ranked password list (github.com/trustelem/
// zxcvbn, MIT; the list is zxcvbn's, drawn from leaked password corpora),
// which ships inside that Go module.
const commonPasswordCount = 10_000

// commonPasswords is the refused set, read-only once built: it is built on
// first use, so a process that never checks a password does not pay for it.
var commonPasswords = sync.OnceValue(func() map[string]struct{} {
	list := frequency.FrequencyLists["passwords"]
	set := make(map[string]struct{}, commonPasswordCount)
	for _, p := range list[:min(commonPasswordCount, len(list))] {
		set[p] = struct{}{}
	}
	return set
})

// isCommonPassword reports whether password, in any letter case, is one of
// the commonPasswordCount most common passwords (e.g. "12345678",
// "password1", "iloveyou"). The list is lower case, so "PassWord1" counts
// too; it is loaded on first use.
func isCommonPassword(password string) bool {
	_, ok := commonPasswords()[strings.ToLower(password)]
	return ok
}

// RevokedJSON answers the operations that revoke tokens: how many
// platforms' Nexo-issued tokens were revoked (app-signed tokens are revoked
// by a per-user floor, so there is nothing to count).
type RevokedJSON struct {
	Revoked int `json:"revoked"`
}

// ChangePassword replaces c's password when req.OldPassword is right
// (else domain.ErrBadCredentials) and revokes every other token of the
// user — Nexo's on all other platforms, and every app-signed one issued
// until now (auth.external_jwt) except the caller's. The live sessions on
// the other platforms close at once (other app-signed sessions on the
// caller's platform at their next token check, ws.ping_interval). The
// caller's own token stays valid.
func (s *Service) ChangePassword(ctx context.Context, c Caller, req PasswordRequest) (RevokedJSON, error) {
	u, err := s.users.Get(ctx, c.UserID)
	if err != nil {
		return RevokedJSON{}, err
	}
	if err := s.passwords.Check(u.PasswordHash, req.OldPassword); err != nil {
		return RevokedJSON{}, err
	}
	hash, err := s.passwords.Hash(req.NewPassword)
	if err != nil {
		return RevokedJSON{}, err
	}
	if err := s.users.SetPassword(ctx, c.UserID, hash); err != nil {
		return RevokedJSON{}, err
	}
	revoked, err := s.tokens.RevokeAll(ctx, c.UserID, c)
	// Every session on another platform ends, whatever its token (an
	// app-signed one is revoked too); on the caller's platform only those
	// on the revoked Nexo token (an app-signed caller's), the others at
	// their next token check. Done even after an error: what was revoked
	// must not stay connected.
	for p := domain.PlatformIOS; p <= domain.PlatformAdmin; p++ {
		if int(p) != c.PlatformID {
			s.sessions.Disconnect(c.UserID, int(p), "")
		}
	}
	if jti, ok := revoked[c.PlatformID]; ok {
		s.sessions.Disconnect(c.UserID, c.PlatformID, jti)
	}
	if err != nil {
		return RevokedJSON{}, err
	}
	return RevokedJSON{Revoked: len(revoked)}, nil
}

// LogoutAll revokes every token of c's user, c's included — Nexo's on
// every platform and every app-signed one issued until now — and closes
// every live session of the user on every instance.
func (s *Service) LogoutAll(ctx context.Context, c Caller) (RevokedJSON, error) {
	revoked, err := s.tokens.RevokeAll(ctx, c.UserID, Caller{})
	s.sessions.Disconnect(c.UserID, 0, "")
	if err != nil {
		return RevokedJSON{}, err
	}
	return RevokedJSON{Revoked: len(revoked)}, nil
}
