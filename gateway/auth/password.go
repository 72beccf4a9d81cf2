package auth

import (
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"

	"golang.org/x/crypto/bcrypt"

	"github.com/nexo-im/nexo/domain"
)

// Passwords hashes and checks passwords with bcrypt at a fixed cost.
//
// bcrypt reads at most 72 bytes, and passwords may be up to 128 characters
// (up to 512 bytes of UTF-8), so every password is first reduced to the
// base64 of its SHA-256 (44 bytes): no part of a long password is ignored.
type Passwords struct {
	cost int
	// dummy is checked against when the user does not exist, so an unknown
	// user costs the same time as a wrong password.
	dummy []byte
}

// NewPasswords returns a hasher at bcrypt cost (auth.bcrypt_cost, 4–31).
// It computes one hash up front (see dummy).
func NewPasswords(cost int) (*Passwords, error) {
	if cost < bcrypt.MinCost || cost > bcrypt.MaxCost {
		return nil, fmt.Errorf("auth: bcrypt cost %d outside %d–%d", cost, bcrypt.MinCost, bcrypt.MaxCost)
	}
	dummy, err := bcrypt.GenerateFromPassword(prehash("nexo: no such user"), cost)
	if err != nil {
		return nil, fmt.Errorf("auth: %w", err)
	}
	return &Passwords{cost: cost, dummy: dummy}, nil
}

// Hash returns the bcrypt hash of password to store in users.password_hash.
func (p *Passwords) Hash(password string) (string, error) {
	h, err := bcrypt.GenerateFromPassword(prehash(password), p.cost)
	if err != nil {
		return "", fmt.Errorf("hash password: %w", err)
	}
	return string(h), nil
}

// Check returns nil when password matches hash and
// domain.ErrBadCredentials when it does not. An empty hash (no such user)
// is checked against a dummy hash first, so it takes as long as a wrong
// password and fails the same way.
func (p *Passwords) Check(hash, password string) error {
	if hash == "" {
		_ = bcrypt.CompareHashAndPassword(p.dummy, prehash(password))
		return domain.ErrBadCredentials
	}
	err := bcrypt.CompareHashAndPassword([]byte(hash), prehash(password))
	switch {
	case err == nil:
		return nil
	case errors.Is(err, bcrypt.ErrMismatchedHashAndPassword):
		return domain.ErrBadCredentials
	}
	return fmt.Errorf("check password: %w", err)
}

func prehash(password string) []byte {
	sum := sha256.Sum256([]byte(password))
	out := make([]byte, base64.StdEncoding.EncodedLen(len(sum)))
	base64.StdEncoding.Encode(out, sum[:])
	return out
}
