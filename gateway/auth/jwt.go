package auth

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/google/uuid"

	"github.com/nexo-im/nexo/configs"
	"github.com/nexo-im/nexo/domain"
)

// jwtClaims is the token's JSON payload.
type jwtClaims struct {
	UserID     string `json:"user_id"`
	PlatformID int    `json:"platform_id"`
	jwt.RegisteredClaims
}

var signingMethod = jwt.SigningMethodHS256

// Issuer signs tokens and keeps the record of active tokens up to date.
type Issuer struct {
	secret []byte
	ttl    time.Duration
	issuer string
	tokens TokenRecorder
}

// NewIssuer returns an Issuer signing with cfg.Secret for cfg.TTL with iss
// cfg.Issuer, recording active tokens in tokens. An empty secret is an
// error (the embedded default generates one before calling this).
func NewIssuer(cfg configs.JWT, tokens TokenRecorder) (*Issuer, error) {
	if cfg.Secret == "" || cfg.TTL <= 0 {
		return nil, errors.New("auth: jwt secret and a positive ttl are required")
	}
	return &Issuer{secret: []byte(cfg.Secret), ttl: cfg.TTL, issuer: cfg.Issuer, tokens: tokens}, nil
}

// Issue signs a new token for userID on platformID and records it as the
// active one, which revokes the previous token of that user on that
// platform (a new login logs the older one out). platformID must be valid
// (domain.Platform.Valid) and userID a valid ID, else
// domain.ErrInvalidArgument.
func (i *Issuer) Issue(ctx context.Context, userID string, platformID int) (Token, error) {
	tok, err := i.sign(userID, platformID)
	if err != nil {
		return Token{}, err
	}
	prev, err := i.tokens.Activate(ctx, userID, platformID, tok.JTI, time.Until(tok.ExpiresAt))
	if err != nil {
		return Token{}, fmt.Errorf("issue token: %w", err)
	}
	tok.Replaced = prev
	return tok, nil
}

// Refresh issues a new token for the bearer of c (same user and platform)
// and revokes c's token, atomically: if c's token is no longer the active
// one (a concurrent refresh, logout or login won), it returns
// domain.ErrTokenRevoked and nothing changes.
func (i *Issuer) Refresh(ctx context.Context, c Claims) (Token, error) {
	tok, err := i.sign(c.UserID, c.PlatformID)
	if err != nil {
		return Token{}, err
	}
	ok, err := i.tokens.Rotate(ctx, c.UserID, c.PlatformID, c.JTI, tok.JTI, time.Until(tok.ExpiresAt))
	if err != nil {
		return Token{}, fmt.Errorf("refresh token: %w", err)
	}
	if !ok {
		return Token{}, domain.ErrTokenRevoked
	}
	return tok, nil
}

// Revoke revokes c's token (logout). A token that is already not the
// active one is not an error: it is refused either way.
func (i *Issuer) Revoke(ctx context.Context, c Claims) error {
	if _, err := i.tokens.Revoke(ctx, c.UserID, c.PlatformID, c.JTI); err != nil {
		return fmt.Errorf("revoke token: %w", err)
	}
	return nil
}

// RevokeAll revokes every token of userID — Nexo's own on every platform
// and app-signed ones issued until now — except the token of keep (the
// zero Claims keeps none), for "log out everywhere" and a password change.
// It returns the revoked jti of Nexo's own tokens per platform, so the
// caller can close the live sessions on them; with an error it may still
// return the ones it revoked.
func (i *Issuer) RevokeAll(ctx context.Context, userID string, keep Claims) (map[int]string, error) {
	keepPlatform, keepExternal := keep.PlatformID, ""
	if keep.IsExternal() {
		keepPlatform, keepExternal = 0, keep.JTI
	}
	revoked, err := i.tokens.RevokeAll(ctx, userID, keepPlatform, keepExternal)
	if err != nil {
		return revoked, fmt.Errorf("revoke tokens of %s: %w", userID, err)
	}
	return revoked, nil
}

func (i *Issuer) sign(userID string, platformID int) (Token, error) {
	if !domain.ValidID(userID) || !domain.Platform(platformID).Valid() {
		return Token{}, fmt.Errorf("issue token for %q on platform %d: %w", userID, platformID, domain.ErrInvalidArgument)
	}
	id, err := uuid.NewV7()
	if err != nil {
		return Token{}, fmt.Errorf("token id: %w", err)
	}
	// exp has whole-second precision; truncating here keeps expire_at equal
	// to what the token itself says.
	now := time.Now().Truncate(time.Second)
	exp := now.Add(i.ttl)
	claims := jwtClaims{
		UserID: userID, PlatformID: platformID,
		RegisteredClaims: jwt.RegisteredClaims{
			Issuer: i.issuer, ID: id.String(),
			IssuedAt: jwt.NewNumericDate(now), ExpiresAt: jwt.NewNumericDate(exp),
		},
	}
	s, err := jwt.NewWithClaims(signingMethod, claims).SignedString(i.secret)
	if err != nil {
		return Token{}, fmt.Errorf("sign token: %w", err)
	}
	return Token{Token: s, JTI: claims.ID, ExpiresAt: exp}, nil
}

// Verifier checks tokens: signature, algorithm, issuer, expiry, claims, and
// that the token is still the active one.
type Verifier struct {
	secret   []byte
	parser   *jwt.Parser
	tokens   ActiveTokens
	external *External
}

// UseExternal makes the verifier accept app-signed tokens (see External)
// when a token is not one of Nexo's own. Call it before serving.
func (v *Verifier) UseExternal(e *External) { v.external = e }

// NewVerifier returns a Verifier for tokens signed with cfg.Secret by
// cfg.Issuer, asking tokens whether a token is still active.
func NewVerifier(cfg configs.JWT, tokens ActiveTokens) (*Verifier, error) {
	if cfg.Secret == "" {
		return nil, errors.New("auth: jwt secret is required")
	}
	return &Verifier{
		secret: []byte(cfg.Secret),
		parser: jwt.NewParser(
			jwt.WithValidMethods([]string{signingMethod.Alg()}),
			jwt.WithIssuer(cfg.Issuer),
			jwt.WithExpirationRequired(),
			jwt.WithIssuedAt(),
		),
		tokens: tokens,
	}, nil
}

// Verify returns the claims of a valid, active token. Errors:
// domain.ErrTokenMissing (empty), domain.ErrTokenExpired (past exp, whatever
// else), domain.ErrTokenInvalid (malformed, bad signature or algorithm,
// wrong issuer, bad claims), domain.ErrTokenRevoked (replaced by a newer
// login or refresh, or logged out), and domain.ErrServerBusy when the token
// record cannot be read.
func (v *Verifier) Verify(ctx context.Context, token string) (Claims, error) {
	if token == "" {
		return Claims{}, domain.ErrTokenMissing
	}
	var jc jwtClaims
	_, err := v.parser.ParseWithClaims(token, &jc, func(*jwt.Token) (any, error) { return v.secret, nil })
	if err != nil && v.external != nil && !errors.Is(err, jwt.ErrTokenExpired) {
		// Not Nexo's own (another key, algorithm or issuer): the app's?
		return v.external.Verify(ctx, token)
	}
	switch {
	case errors.Is(err, jwt.ErrTokenExpired):
		return Claims{}, domain.ErrTokenExpired
	case err != nil:
		return Claims{}, fmt.Errorf("%w: %s", domain.ErrTokenInvalid, invalidReason(err))
	case !domain.ValidID(jc.UserID) || !domain.Platform(jc.PlatformID).Valid() || jc.ID == "" || jc.IssuedAt == nil:
		return Claims{}, fmt.Errorf("%w: bad claims", domain.ErrTokenInvalid)
	}
	c := Claims{UserID: jc.UserID, PlatformID: jc.PlatformID, JTI: jc.ID, IssuedAt: jc.IssuedAt.Time, ExpiresAt: jc.ExpiresAt.Time}
	active, err := v.tokens.IsActive(ctx, c.UserID, c.PlatformID, c.JTI)
	if err != nil {
		return Claims{}, fmt.Errorf("%w: token store: %v", domain.ErrServerBusy, err)
	}
	if !active {
		return Claims{}, domain.ErrTokenRevoked
	}
	return c, nil
}

// Authenticate is Verify in the shape the WebSocket layer asks for: the
// bearer's user and platform, the token's jti and its expiry; errors as
// Verify.
func (v *Verifier) Authenticate(ctx context.Context, token string) (userID string, platformID int, jti string, expiresAt time.Time, err error) {
	c, err := v.Verify(ctx, token)
	if err != nil {
		return "", 0, "", time.Time{}, err
	}
	return c.UserID, c.PlatformID, c.JTI, c.ExpiresAt, nil
}

// invalidReason is the fixed, client-safe text for a token the parser
// refused: the library's own messages are never sent (they change between
// versions and describe internals).
func invalidReason(err error) string {
	switch {
	case errors.Is(err, jwt.ErrTokenMalformed):
		return "malformed token"
	case errors.Is(err, jwt.ErrTokenSignatureInvalid), errors.Is(err, jwt.ErrTokenUnverifiable):
		return "bad signature or algorithm"
	case errors.Is(err, jwt.ErrTokenInvalidIssuer):
		return "wrong issuer"
	case errors.Is(err, jwt.ErrTokenNotValidYet), errors.Is(err, jwt.ErrTokenUsedBeforeIssued):
		return "token not valid yet"
	}
	return "bad claims"
}
