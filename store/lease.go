package store

import (
	"context"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
)

// Lease is a named lease in Redis ("{prefix}:lease:{name}") that one
// holder at a time keeps by renewing it: the single-instance loops of a
// cluster (the retention cleaner) run only while they hold theirs. A
// holder that dies loses it when its ttl runs out.
type Lease struct {
	rdb redis.UniversalClient
	key string
}

// NewLease returns the lease name under keys.Prefix.
func NewLease(rdb redis.UniversalClient, keys Keys, name string) *Lease {
	return &Lease{rdb: rdb, key: keys.Key("lease", name)}
}

// acquireScript takes the lease when free and renews it when the caller
// already holds it.
var acquireScript = redis.NewScript(`
local cur = redis.call('GET', KEYS[1])
if cur == false or cur == ARGV[1] then
  redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
  return 1
end
return 0`)

// Acquire takes or renews the lease for holder for ttl and reports whether
// holder holds it now.
func (l *Lease) Acquire(ctx context.Context, holder string, ttl time.Duration) (bool, error) {
	n, err := acquireScript.Run(ctx, l.rdb, []string{l.key}, holder, ttl.Milliseconds()).Int()
	if err != nil {
		return false, fmt.Errorf("lease %s: %w", l.key, err)
	}
	return n == 1, nil
}

// Release gives the lease up if holder holds it.
func (l *Lease) Release(ctx context.Context, holder string) error {
	if err := unlockScript.Run(ctx, l.rdb, []string{l.key}, holder).Err(); err != nil {
		return fmt.Errorf("release lease %s: %w", l.key, err)
	}
	return nil
}

// UserKeys deletes the Redis state kept per user besides tokens: the
// presence records ("sessions", "last_seen"), the routing sets of the
// previous release ("online"), resend marks and the profile cache.
type UserKeys struct {
	rdb  redis.UniversalClient
	keys Keys
}

// NewUserKeys returns the eraser on rdb under keys.Prefix.
func NewUserKeys(rdb redis.UniversalClient, keys Keys) *UserKeys {
	return &UserKeys{rdb: rdb, keys: keys}
}

// EraseUserKeys deletes userID's per-user keys; one DEL per key, so
// nothing crosses a Redis Cluster slot. The token floor stays: it keeps
// refusing the user's app-signed tokens.
func (u *UserKeys) EraseUserKeys(ctx context.Context, userID string) error {
	keys := []string{
		u.keys.Key("sessions", "{"+userID+"}"), u.keys.Key("last_seen", "{"+userID+"}"),
		u.keys.Online(userID), u.keys.OnlineConns(userID), u.keys.User(userID),
	}
	for p := 1; p <= maxPlatform; p++ {
		keys = append(keys, u.keys.Key("resend", userID, fmt.Sprint(p)))
	}
	_, err := u.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for _, k := range keys {
			p.Del(ctx, k)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("erase the keys of %s: %w", userID, err)
	}
	return nil
}
