package auth

import (
	"context"

	"github.com/nexo-im/nexo/services/account"
)

// AccountTokens is the Issuer as the account service's token issuer
// (account.Tokens): the same operations in the service's types.
type AccountTokens struct {
	Issuer *Issuer
}

var _ account.Tokens = AccountTokens{}

// claimsOf is the caller's token as the Issuer knows it: user, platform
// and jti are all its operations read (IsExternal looks at the jti).
func claimsOf(c account.Caller) Claims {
	return Claims{UserID: c.UserID, PlatformID: c.PlatformID, JTI: c.JTI}
}

func issued(t Token) account.IssuedToken {
	return account.IssuedToken{Token: t.Token, ExpiresAt: t.ExpiresAt, Replaced: t.Replaced}
}

// Issue implements account.Tokens with Issuer.Issue.
func (a AccountTokens) Issue(ctx context.Context, userID string, platformID int) (account.IssuedToken, error) {
	t, err := a.Issuer.Issue(ctx, userID, platformID)
	return issued(t), err
}

// Refresh implements account.Tokens with Issuer.Refresh.
func (a AccountTokens) Refresh(ctx context.Context, c account.Caller) (account.IssuedToken, error) {
	t, err := a.Issuer.Refresh(ctx, claimsOf(c))
	return issued(t), err
}

// Revoke implements account.Tokens with Issuer.Revoke.
func (a AccountTokens) Revoke(ctx context.Context, c account.Caller) error {
	return a.Issuer.Revoke(ctx, claimsOf(c))
}

// RevokeAll implements account.Tokens with Issuer.RevokeAll.
func (a AccountTokens) RevokeAll(ctx context.Context, userID string, keep account.Caller) (map[int]string, error) {
	return a.Issuer.RevokeAll(ctx, userID, claimsOf(keep))
}
