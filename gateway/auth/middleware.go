package auth

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"

	"github.com/cloudwego/hertz/pkg/app"

	"github.com/nexo-im/nexo/domain"
	"github.com/nexo-im/nexo/gateway/wire"
)

// claimsKey holds the Claims in the RequestContext's key/value store.
const claimsKey = "nexo.auth.claims"

type ctxKey struct{}

// Middleware returns a Hertz handler that requires a valid, active token
// from `Authorization: Bearer <token>` or, as OpenIM clients send it, the
// `token` header. On success the claims are available to later handlers
// through ClaimsOf(c) and ClaimsFromContext(ctx). On failure it aborts with
// 401 and the error envelope, reason token_missing, token_invalid,
// token_expired or token_revoked (503 server_busy when the token store
// cannot be read; logged to logger).
func Middleware(v *Verifier, logger *slog.Logger) app.HandlerFunc {
	return func(ctx context.Context, c *app.RequestContext) {
		token, err := bearer(c)
		var claims Claims
		if err == nil {
			claims, err = v.Verify(ctx, token)
		}
		if err != nil {
			var we *wire.Error
			if errors.Is(err, domain.ErrServerBusy) {
				logger.ErrorContext(ctx, "token check failed", "path", string(c.Path()),
					"request_id", wire.RequestIDFrom(ctx), "err", err)
				we = wire.NewError(wire.ReasonServerBusy, "token store unavailable")
			} else {
				we = wire.FromError(err)
			}
			c.AbortWithStatusJSON(we.HTTPStatus, wire.Fail(we.WithRequestID(wire.RequestIDFrom(ctx))))
			return
		}
		c.Set(claimsKey, claims)
		c.Next(context.WithValue(ctx, ctxKey{}, claims))
	}
}

// bearer extracts the token. A non-Bearer Authorization header with no
// token header is token_invalid (a client sending something, wrongly);
// nothing at all is token_missing.
func bearer(c *app.RequestContext) (string, error) {
	authz := strings.TrimSpace(string(c.GetHeader("Authorization")))
	if scheme, tok, ok := strings.Cut(authz, " "); ok && strings.EqualFold(scheme, "Bearer") {
		if tok = strings.TrimSpace(tok); tok != "" {
			return tok, nil
		}
	}
	if tok := strings.TrimSpace(string(c.GetHeader("token"))); tok != "" {
		return tok, nil
	}
	if authz != "" {
		return "", fmt.Errorf("%w: authorization header must be `Bearer <token>`", domain.ErrTokenInvalid)
	}
	return "", domain.ErrTokenMissing
}

// ClaimsOf returns the claims Middleware stored for this request; ok is
// false on a route without the middleware.
func ClaimsOf(c *app.RequestContext) (Claims, bool) {
	v, ok := c.Get(claimsKey)
	if !ok {
		return Claims{}, false
	}
	claims, ok := v.(Claims)
	return claims, ok
}

// ClaimsFromContext returns the claims Middleware put in the context it
// passed on; ok is false on a route without the middleware.
func ClaimsFromContext(ctx context.Context) (Claims, bool) {
	claims, ok := ctx.Value(ctxKey{}).(Claims)
	return claims, ok
}
