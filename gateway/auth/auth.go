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
	// RevokeAll revokes the user's active token on every platform except
	// keepPlatform (0 keeps none) and every app-signed token issued until
	// now except the one with jti keepExternal ("" keeps none), and returns
	// the revoked jti of each platform that had one (also with an error
	// about the app-signed ones).
	RevokeAll(ctx context.Context, userID string, keepPlatform int, keepExternal string) (map[int]string, error)
}

// SessionChecker answers the WebSocket layer's periodic "is this session
// still valid" for both kinds of token: Nexo's own by their active jti,
// app-signed ones (jti ExternalPrefix...) by the user's revocation state.
type SessionChecker struct {
	Tokens ActiveTokens
	Floors UserFloors
}

// IsActive implements ws.TokenChecker.
func (s SessionChecker) IsActive(ctx context.Context, userID string, platformID int, jti string) (bool, error) {
	if iat, ok := ExternalIssuedAt(jti); ok {
		return s.Floors.ExternalAllowed(ctx, userID, iat, jti)
	}
	return s.Tokens.IsActive(ctx, userID, platformID, jti)
}

// IsExternal reports whether c came from an app-signed token
// (auth.external_jwt) rather than one Nexo issued.
func (c Claims) IsExternal() bool {
	_, ok := ExternalIssuedAt(c.JTI)
	return ok
}
