package account

import (
	"context"
	"fmt"
	"strings"

	"github.com/google/uuid"

	"github.com/nexo-im/nexo/domain"
)

// RegisterRequest is the body of POST /user/register.
type RegisterRequest struct {
	UserID   string `json:"user_id"`
	Nickname string `json:"nickname"`
	Password string `json:"password"`
	Avatar   string `json:"avatar"`
}

// Validate applies the field rules of docs/openapi.yaml; user_id may be
// empty (Register generates one) but not one of the reserved IDs.
func (r *RegisterRequest) Validate() error {
	if r.UserID != "" {
		if err := domain.CheckID("user_id", r.UserID); err != nil {
			return err
		}
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

// RegisteredJSON answers a registration.
type RegisteredJSON struct {
	UserID string `json:"user_id"`
}

// RegistrationOpen returns nil when anyone may register, else forbidden
// with the reason. The route asks before reading the body, so a closed
// registration answers the same whatever is sent.
func (s *Service) RegistrationOpen() error {
	if s.closed {
		return domain.NewError(domain.ErrForbidden, "registration is closed (auth.registration): users come from the app's server API")
	}
	return nil
}

// Register creates the account of req (validated) for a client at ip; the
// ID is a UUIDv7 when req has none. It counts against the registrations
// of ip (too_many_requests), applies the word filter to the nickname
// (blocked_word, or masked), hashes the password in the hashing gate
// (server_busy when it is full) and returns domain.ErrUserExists for a
// taken ID.
func (s *Service) Register(ctx context.Context, ip string, req RegisterRequest) (RegisteredJSON, error) {
	if err := s.RegistrationOpen(); err != nil {
		return RegisteredJSON{}, err
	}
	if req.UserID == "" {
		id, err := uuid.NewV7()
		if err != nil {
			return RegisteredJSON{}, fmt.Errorf("user id: %w", err)
		}
		req.UserID = id.String()
	}
	if s.limits != nil {
		if err := s.limits.AllowRegister(ctx, ip); err != nil {
			return RegisteredJSON{}, err
		}
	}
	// After the registration limit, so the word list cannot be probed
	// through registrations faster than accounts can be made.
	if err := s.filterNickname(&req.Nickname); err != nil {
		return RegisteredJSON{}, err
	}
	var hash string
	err := s.hashes.do(ctx, func() (err error) {
		hash, err = s.passwords.Hash(req.Password)
		return err
	})
	if err != nil {
		return RegisteredJSON{}, err
	}
	u, err := s.users.Create(ctx, domain.User{ID: req.UserID, Nickname: req.Nickname, Avatar: req.Avatar, PasswordHash: hash})
	if err != nil {
		return RegisteredJSON{}, err
	}
	return RegisteredJSON{UserID: u.ID}, nil
}
