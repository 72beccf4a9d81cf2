// Package auth issues and checks Nexo's access tokens and hashes passwords.
//
// A token is an HS256 JWT (golang-jwt/v5) with the claims user_id,
// platform_id, jti (a UUIDv7), iat, exp and iss. Besides its signature and
// expiry, a token counts only while its jti is the one recorded as active for
// its (user_id, platform_id) in Redis (store.Tokens): a new login or a
// refresh replaces the record, and logout deletes it, so a replaced or
// logged-out token is refused by every check, HTTP and WebSocket alike.
package auth

import (
	"context"
	"time"
)

// Claims are what a verified token says about its bearer.
type Claims struct {
	UserID     string
	PlatformID int
	// JTI identifies the token; it is the value recorded as active.
	JTI       string
	IssuedAt  time.Time
	ExpiresAt time.Time
}

// Token is a freshly issued token and its expiry (whole seconds, as in exp).
type Token struct {
	// Replaced is the jti of the token this one replaced as the active token
	// of its user and platform ("" if none): its live sessions must close.
	Replaced  string
	Token     string
	JTI       string
	ExpiresAt time.Time
}

// ActiveTokens answers whether a jti is the active token of a user on a
// platform. store.Tokens satisfies it.
type ActiveTokens interface {
	IsActive(ctx context.Context, userID string, platformID int, jti string) (bool, error)
}

// TokenRecorder records, replaces and revokes the active token of a user on
// a platform. Rotate and Revoke act only while the given jti is still the
// active one and report whether they did. store.Tokens satisfies it.
type TokenRecorder interface {
	Activate(ctx context.Context, userID string, platformID int, jti string, ttl time.Duration) (previous string, err error)
	Rotate(ctx context.Context, userID string, platformID int, oldJTI, newJTI string, ttl time.Duration) (bool, error)
	Revoke(ctx context.Context, userID string, platformID int, jti string) (bool, error)
}
