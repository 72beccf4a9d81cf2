package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
)

// Tokens records the active token of each (user_id, platform_id) in Redis:
// key Keys.Token(user, platform) holds the token's jti and expires with the
// token. One key per pair means a new login on a platform replaces (and so
// revokes) the previous token of that platform; logout deletes it. Every
// check of a token (HTTP and WebSocket) asks IsActive, so a replaced or
// revoked jti is refused everywhere.
type Tokens struct {
	rdb  redis.UniversalClient
	keys Keys
}

// NewTokens returns the token store on rdb with keys under keys.Prefix.
func NewTokens(rdb redis.UniversalClient, keys Keys) *Tokens {
	return &Tokens{rdb: rdb, keys: keys}
}

// Compare-and-set and compare-and-delete: the change applies only while the
// key still holds the expected jti, so a refresh or logout racing a newer
// login never undoes it.
var (
	rotateScript = redis.NewScript(`
if redis.call('GET', KEYS[1]) == ARGV[1] then
  redis.call('SET', KEYS[1], ARGV[2], 'PX', ARGV[3])
  return 1
end
return 0`)
	revokeScript = redis.NewScript(`
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('DEL', KEYS[1])
end
return 0`)
)

// Activate makes jti the active token of (userID, platformID) for ttl,
// replacing any previous one. It returns the jti it replaced ("" when none),
// so a caller can close what still runs on it.
func (t *Tokens) Activate(ctx context.Context, userID string, platformID int, jti string, ttl time.Duration) (previous string, err error) {
	prev, err := t.rdb.SetArgs(ctx, t.keys.Token(userID, platformID), jti, redis.SetArgs{TTL: ttl, Get: true}).Result()
	if errors.Is(err, redis.Nil) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("activate token of %s/%d: %w", userID, platformID, err)
	}
	return prev, nil
}

// Rotate replaces oldJTI by newJTI (with ttl) only while oldJTI is still the
// active token, and reports whether it did; false means oldJTI had already
// been replaced, revoked or had expired.
func (t *Tokens) Rotate(ctx context.Context, userID string, platformID int, oldJTI, newJTI string, ttl time.Duration) (bool, error) {
	n, err := rotateScript.Run(ctx, t.rdb, []string{t.keys.Token(userID, platformID)}, oldJTI, newJTI, ttl.Milliseconds()).Int()
	if err != nil {
		return false, fmt.Errorf("rotate token of %s/%d: %w", userID, platformID, err)
	}
	return n == 1, nil
}

// IsActive reports whether jti is the active token of (userID, platformID).
func (t *Tokens) IsActive(ctx context.Context, userID string, platformID int, jti string) (bool, error) {
	got, err := t.rdb.Get(ctx, t.keys.Token(userID, platformID)).Result()
	if errors.Is(err, redis.Nil) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("check token of %s/%d: %w", userID, platformID, err)
	}
	return got == jti, nil
}

// Revoke deletes the record of (userID, platformID) only while jti is the
// active token, and reports whether it did; a token that was already
// replaced by a newer login leaves the newer one alone.
func (t *Tokens) Revoke(ctx context.Context, userID string, platformID int, jti string) (bool, error) {
	n, err := revokeScript.Run(ctx, t.rdb, []string{t.keys.Token(userID, platformID)}, jti).Int()
	if err != nil {
		return false, fmt.Errorf("revoke token of %s/%d: %w", userID, platformID, err)
	}
	return n == 1, nil
}
