package auth

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/lestrrat-go/httprc/v3"
	"github.com/lestrrat-go/jwx/v3/jwa"
	"github.com/lestrrat-go/jwx/v3/jwk"
	"github.com/lestrrat-go/jwx/v3/jws"
	"github.com/lestrrat-go/jwx/v3/jwt"

	"github.com/nexo-im/nexo/configs"
	"github.com/nexo-im/nexo/domain"
)

// ExternalPrefix starts the jti Nexo assigns to a session opened with an
// app-signed token: "ext:<iat unix seconds>:<hash of the token>". The iat
// in it lets the periodic session check apply user revocation without the
// token itself.
const ExternalPrefix = "ext:"

// UserFloors is the revocation state shared by all instances
// (store.Tokens): an app-signed token of userID issued at issuedAt, whose
// Nexo jti is jti (ExternalPrefix...), counts only while ExternalAllowed
// says so (not disabled, not issued before the user's last revocation
// unless that revocation kept this very token).
type UserFloors interface {
	ExternalAllowed(ctx context.Context, userID string, issuedAt time.Time, jti string) (bool, error)
}

// UserCreator creates a user on first use of an app-signed token
// (auth.external_jwt.auto_create). It returns domain.ErrUserExists for an
// existing one, which is fine.
type UserCreator interface {
	Create(ctx context.Context, u domain.User) (domain.User, error)
}

// External verifies JWTs signed by the app's backend (auth.external_jwt):
// HS256 with a shared secret, or RS256/ES256/EdDSA with public keys from a
// JWKS URL that lestrrat-go/jwx's jwk.Cache keeps fresh (refreshed every
// jwks_refresh, and at once — at most every jwks_min_refresh — when a
// token names a kid the cached set lacks, so the app can rotate keys).
type External struct {
	cfg     configs.ExternalJWT
	secret  []byte
	cache   *jwk.Cache
	floors  UserFloors
	users   UserCreator
	log     *slog.Logger
	created sync.Map // user IDs known to exist (auto_create)

	refreshMu   sync.Mutex
	lastRefresh time.Time
}

// NewExternal returns the verifier for cfg. With a JWKS URL it starts a
// jwk.Cache bound to ctx (its goroutines end with ctx) and registers the
// URL without waiting for the first fetch, so Nexo starts even while the
// app's key endpoint is down (tokens are then refused until it answers).
func NewExternal(ctx context.Context, cfg configs.ExternalJWT, floors UserFloors, users UserCreator, log *slog.Logger) (*External, error) {
	e := &External{cfg: cfg, floors: floors, users: users, log: log}
	if cfg.Secret != "" {
		e.secret = []byte(cfg.Secret)
	}
	if cfg.JWKSURL != "" {
		cache, err := jwk.NewCache(ctx, httprc.NewClient())
		if err != nil {
			return nil, fmt.Errorf("external jwt: jwks cache: %w", err)
		}
		err = cache.Register(ctx, cfg.JWKSURL, jwk.WithConstantInterval(cfg.JWKSRefresh), jwk.WithWaitReady(false))
		if err != nil {
			return nil, fmt.Errorf("external jwt: register %s: %w", cfg.JWKSURL, err)
		}
		e.cache = cache
	}
	return e, nil
}

// Verify checks an app-signed token and returns its claims: JTI is
// ExternalPrefix + iat + a hash of the token. Errors as Verifier.Verify:
// domain.ErrTokenExpired, ErrTokenInvalid (signature, algorithm, iss, aud,
// claims), ErrTokenRevoked (the user was disabled or revoked after iat),
// ErrServerBusy (the revocation state or the user store failed).
func (e *External) Verify(ctx context.Context, token string) (Claims, error) {
	alg, err := headerAlg(token)
	if err != nil {
		return Claims{}, err
	}
	var tok jwt.Token
	switch alg {
	case jwa.HS256().String():
		if e.secret == nil {
			return Claims{}, fmt.Errorf("%w: HS256 is not configured", domain.ErrTokenInvalid)
		}
		tok, err = jwt.ParseString(token, append(e.validation(), jwt.WithKey(jwa.HS256(), e.secret))...)
	case jwa.RS256().String(), jwa.ES256().String(), jwa.EdDSA().String():
		if e.cache == nil {
			return Claims{}, fmt.Errorf("%w: %s needs auth.external_jwt.jwks_url", domain.ErrTokenInvalid, alg)
		}
		tok, err = e.parseWithJWKS(ctx, token)
	default:
		return Claims{}, fmt.Errorf("%w: algorithm %q is not accepted", domain.ErrTokenInvalid, alg)
	}
	if err != nil {
		if errors.Is(err, jwt.TokenExpiredError()) {
			return Claims{}, domain.ErrTokenExpired
		}
		return Claims{}, fmt.Errorf("%w: %v", domain.ErrTokenInvalid, err)
	}
	c, err := e.claims(tok, token)
	if err != nil {
		return Claims{}, err
	}
	ok, err := e.floors.ExternalAllowed(ctx, c.UserID, c.IssuedAt, c.JTI)
	if err != nil {
		return Claims{}, fmt.Errorf("%w: token store: %v", domain.ErrServerBusy, err)
	}
	if !ok {
		return Claims{}, domain.ErrTokenRevoked
	}
	if err := e.ensureUser(ctx, c.UserID); err != nil {
		return Claims{}, err
	}
	return c, nil
}

// validation is the claim checks every external token passes.
func (e *External) validation() []jwt.ParseOption {
	opts := []jwt.ParseOption{jwt.WithValidate(true), jwt.WithAcceptableSkew(e.cfg.Leeway)}
	if e.cfg.Issuer != "" {
		opts = append(opts, jwt.WithIssuer(e.cfg.Issuer))
	}
	if e.cfg.Audience != "" {
		opts = append(opts, jwt.WithAudience(e.cfg.Audience))
	}
	return opts
}

// parseWithJWKS verifies against the cached key set; a kid the set lacks
// forces one refresh (rate-limited) and a second try.
func (e *External) parseWithJWKS(ctx context.Context, token string) (jwt.Token, error) {
	parse := func(set jwk.Set) (jwt.Token, error) {
		return jwt.ParseString(token, append(e.validation(), jwt.WithKeySet(set, jws.WithInferAlgorithmFromKey(true)))...)
	}
	set, err := e.cache.Lookup(ctx, e.cfg.JWKSURL)
	if err != nil {
		set, err = e.refresh(ctx)
		if err != nil {
			return nil, fmt.Errorf("jwks %s unavailable: %w", e.cfg.JWKSURL, err)
		}
	}
	tok, err := parse(set)
	if err == nil || errors.Is(err, jwt.TokenExpiredError()) || !strings.Contains(err.Error(), "key") {
		return tok, err
	}
	fresh, rerr := e.refresh(ctx)
	if rerr != nil || fresh == nil {
		return nil, err
	}
	return parse(fresh)
}

// refresh refetches the JWKS at most once per jwks_min_refresh; it returns
// nil (and no error) when the last refresh is too recent.
func (e *External) refresh(ctx context.Context) (jwk.Set, error) {
	e.refreshMu.Lock()
	defer e.refreshMu.Unlock()
	if time.Since(e.lastRefresh) < e.cfg.JWKSMinRefresh {
		return nil, nil
	}
	e.lastRefresh = time.Now()
	set, err := e.cache.Refresh(ctx, e.cfg.JWKSURL)
	if err != nil {
		e.log.Warn("jwks refresh failed", "url", e.cfg.JWKSURL, "err", err)
	}
	return set, err
}

// claims reads the configured user ID and platform claims.
func (e *External) claims(tok jwt.Token, raw string) (Claims, error) {
	var userID string
	if err := tok.Get(e.cfg.UserIDClaim, &userID); err != nil || !domain.ValidID(userID) {
		return Claims{}, fmt.Errorf("%w: claim %q must be a user ID (1-64 of A-Z a-z 0-9 _ -)", domain.ErrTokenInvalid, e.cfg.UserIDClaim)
	}
	platform := e.cfg.DefaultPlatform
	var raw1 any
	if err := tok.Get(e.cfg.PlatformClaim, &raw1); err == nil {
		platform = platformOf(raw1)
	}
	if !domain.Platform(platform).Valid() {
		return Claims{}, fmt.Errorf("%w: claim %q must be a platform id 1-10", domain.ErrTokenInvalid, e.cfg.PlatformClaim)
	}
	iat, ok := tok.IssuedAt()
	if !ok {
		return Claims{}, fmt.Errorf("%w: iat is required (user revocation compares it)", domain.ErrTokenInvalid)
	}
	exp, ok := tok.Expiration()
	if !ok {
		return Claims{}, fmt.Errorf("%w: exp is required", domain.ErrTokenInvalid)
	}
	sum := sha256.Sum256([]byte(raw))
	jti := ExternalPrefix + strconv.FormatInt(iat.Unix(), 10) + ":" + hex.EncodeToString(sum[:12])
	return Claims{UserID: userID, PlatformID: platform, JTI: jti, IssuedAt: iat, ExpiresAt: exp}, nil
}

func platformOf(v any) int {
	switch p := v.(type) {
	case float64:
		if p == float64(int(p)) {
			return int(p)
		}
	case string:
		n, err := strconv.Atoi(p)
		if err == nil {
			return n
		}
	case int64:
		return int(p)
	case int:
		return p
	}
	return 0
}

// ensureUser creates the user on first use when auto_create is on; without
// it an unknown user is fine here (sends to them fail as user_not_found).
func (e *External) ensureUser(ctx context.Context, userID string) error {
	if !e.cfg.AutoCreate || e.users == nil {
		return nil
	}
	if _, ok := e.created.Load(userID); ok {
		return nil
	}
	_, err := e.users.Create(ctx, domain.User{ID: userID, Nickname: userID})
	if err != nil && !errors.Is(err, domain.ErrUserExists) {
		return fmt.Errorf("%w: create user %s: %v", domain.ErrServerBusy, userID, err)
	}
	e.created.Store(userID, struct{}{})
	return nil
}

// headerAlg returns the alg of a compact JWS without verifying it.
func headerAlg(token string) (string, error) {
	msg, err := jws.Parse([]byte(token))
	if err != nil || len(msg.Signatures()) != 1 {
		return "", fmt.Errorf("%w: not a compact JWS", domain.ErrTokenInvalid)
	}
	alg, ok := msg.Signatures()[0].ProtectedHeaders().Algorithm()
	if !ok {
		return "", fmt.Errorf("%w: no alg", domain.ErrTokenInvalid)
	}
	return alg.String(), nil
}

// ExternalIssuedAt returns the iat encoded in an external session's jti.
func ExternalIssuedAt(jti string) (time.Time, bool) {
	rest, ok := strings.CutPrefix(jti, ExternalPrefix)
	if !ok {
		return time.Time{}, false
	}
	sec, _, _ := strings.Cut(rest, ":")
	n, err := strconv.ParseInt(sec, 10, 64)
	if err != nil {
		return time.Time{}, false
	}
	return time.Unix(n, 0), true
}
