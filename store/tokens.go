package store

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/nexo-im/nexo/domain"
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

// floorTTL is how long a user's revocation floor is kept: app-signed
// tokens older than the floor stay refused this long after the revocation,
// so apps should not issue tokens that live longer.
const floorTTL = 90 * 24 * time.Hour

// disabledFloor marks a disabled user in the floor key.
const disabledFloor = "disabled"

// maxPlatform is the highest platform id (domain.Platform).
const maxPlatform = 10

// RevokeUser revokes every token of userID at once, on every instance:
// Nexo's own (the active-token records of all platforms are deleted) and
// app-signed ones issued before now (the floor key
// "{prefix}:token_floor:{user_id}" is set to now, rounded up to the next
// second, since iat has whole seconds). A disabled user stays disabled.
func (t *Tokens) RevokeUser(ctx context.Context, userID string) error {
	_, err := t.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for pl := 1; pl <= maxPlatform; pl++ {
			p.Del(ctx, t.keys.Token(userID, pl))
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("revoke tokens of %s: %w", userID, err)
	}
	return t.raiseFloor(ctx, userID, "")
}

// raiseFloor refuses the app-signed tokens of userID issued until now,
// except the one whose jti is keep ("" keeps none): the floor key holds
// "<unix seconds>" or "<unix seconds> <jti>".
func (t *Tokens) raiseFloor(ctx context.Context, userID, keep string) error {
	floor := strconv.FormatInt(time.Now().Unix()+1, 10)
	if keep != "" {
		floor += " " + keep
	}
	if err := setFloorScript.Run(ctx, t.rdb, []string{t.keys.Key("token_floor", userID)}, floor, floorTTL.Milliseconds()).Err(); err != nil {
		return fmt.Errorf("revoke tokens of %s: %w", userID, err)
	}
	return nil
}

// setFloorScript raises the floor unless the user is disabled.
var setFloorScript = redis.NewScript(`
if redis.call('GET', KEYS[1]) == 'disabled' then return 0 end
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
return 1`)

// SetDisabled disables (revoking every token, as RevokeUser) or enables
// userID. While disabled, ExternalAllowed refuses every app-signed token of
// the user; Nexo's own are refused because their records are gone and
// login and POST /api/token refuse to issue new ones (the database flag).
func (t *Tokens) SetDisabled(ctx context.Context, userID string, disabled bool) error {
	key := t.keys.Key("token_floor", userID)
	if !disabled {
		// Tokens issued while disabled stay refused.
		floor := strconv.FormatInt(time.Now().Unix()+1, 10)
		if err := t.rdb.Set(ctx, key, floor, floorTTL).Err(); err != nil {
			return fmt.Errorf("enable %s: %w", userID, err)
		}
		return nil
	}
	if err := t.rdb.Set(ctx, key, disabledFloor, 0).Err(); err != nil {
		return fmt.Errorf("disable %s: %w", userID, err)
	}
	return t.RevokeUser(ctx, userID)
}

// ExternalAllowed reports whether an app-signed token of userID issued at
// issuedAt, with Nexo's jti for it (auth.ExternalPrefix...), still counts:
// the user is not disabled and the token is not older than the user's last
// revocation, or it is the one token that revocation kept (the caller of a
// password change).
func (t *Tokens) ExternalAllowed(ctx context.Context, userID string, issuedAt time.Time, jti string) (bool, error) {
	v, err := t.rdb.Get(ctx, t.keys.Key("token_floor", userID)).Result()
	if errors.Is(err, redis.Nil) {
		return true, nil
	}
	if err != nil {
		return false, fmt.Errorf("check tokens of %s: %w", userID, err)
	}
	if v == disabledFloor {
		return false, nil
	}
	sec, keep, _ := strings.Cut(v, " ")
	floor, err := strconv.ParseInt(sec, 10, 64)
	if err != nil {
		return false, fmt.Errorf("token floor of %s is %q", userID, v)
	}
	return issuedAt.Unix() >= floor || (keep != "" && keep == jti), nil
}

// RevokeAll revokes every token of userID except the caller's, for "log
// out everywhere" and a password change: it deletes the active-token record
// on every platform (domain.Platform 1–10) except keepPlatform (0 keeps
// none), and raises the user's floor so that every app-signed token issued
// until now is refused too, except the one whose jti is keepExternal (""
// keeps none). It returns the jti each deleted record held. GETDEL per key:
// one key per platform, so nothing crosses a Redis Cluster slot; a login
// racing it simply wins.
func (t *Tokens) RevokeAll(ctx context.Context, userID string, keepPlatform int, keepExternal string) (map[int]string, error) {
	pipe := t.rdb.Pipeline()
	cmds := map[int]*redis.StringCmd{}
	for p := domain.PlatformIOS; p <= domain.PlatformAdmin; p++ {
		if int(p) == keepPlatform {
			continue
		}
		cmds[int(p)] = pipe.GetDel(ctx, t.keys.Token(userID, int(p)))
	}
	if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
		return nil, fmt.Errorf("revoke tokens of %s: %w", userID, err)
	}
	out := map[int]string{}
	for p, c := range cmds {
		if jti, err := c.Result(); err == nil {
			out[p] = jti
		}
	}
	if err := t.raiseFloor(ctx, userID, keepExternal); err != nil {
		return out, err
	}
	return out, nil
}
