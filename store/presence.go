package store

import (
	"context"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
)

// Presence records which users have a live WebSocket connection, for every
// gateway instance to read. Key Keys.Online(user) ("{prefix}:online:{user_id}",
// seed design §3.8) is a set of the instance ids that hold a connection of
// the user, with TTL ws.presence_ttl refreshed by heartbeats:
//
//   - a user is online while the key exists (IsOnline is EXISTS);
//   - an instance removes only its own member when the user's last
//     connection there closes, so a user still connected through another
//     instance stays online (a plain "1" value deleted on disconnect would
//     take them offline);
//   - a crashed instance's member disappears with the key's TTL once no live
//     instance refreshes it, so a user is never shown online much longer
//     than ws.presence_ttl after their last connection.
//
// With a liveness check (WithLive) a member counts only while its instance
// is live: a crashed instance's entries stop counting when its membership
// lapses (cluster.instance_ttl), not when the presence TTL runs out.
type Presence struct {
	rdb      redis.UniversalClient
	keys     Keys
	instance string
	ttl      time.Duration
	live     func(ctx context.Context, instance string) bool
}

// NewPresence returns the presence store on rdb with keys under keys.Prefix.
// instance names this process among gateway instances (unique and stable
// while it runs, e.g. host name + pid); ttl is ws.presence_ttl.
func NewPresence(rdb redis.UniversalClient, keys Keys, instance string, ttl time.Duration) *Presence {
	return &Presence{rdb: rdb, keys: keys, instance: instance, ttl: ttl}
}

// WithLive returns a copy of p whose reads count a member only while
// live(ctx, member) is true (store.Membership.IsLive).
func (p *Presence) WithLive(live func(ctx context.Context, instance string) bool) *Presence {
	c := *p
	c.live = live
	return &c
}

// MarkOnline adds this instance to the user's presence and (re)sets the TTL,
// atomically (MULTI), so the key never exists without a TTL.
func (p *Presence) MarkOnline(ctx context.Context, userID string) error {
	key := p.keys.Online(userID)
	_, err := p.rdb.TxPipelined(ctx, func(tx redis.Pipeliner) error {
		tx.SAdd(ctx, key, p.instance)
		tx.PExpire(ctx, key, p.ttl)
		return nil
	})
	if err != nil {
		return fmt.Errorf("mark %s online: %w", userID, err)
	}
	return nil
}

// MarkOffline removes this instance from the user's presence; Redis drops
// the key when no instance is left, and the user is offline.
func (p *Presence) MarkOffline(ctx context.Context, userID string) error {
	if err := p.rdb.SRem(ctx, p.keys.Online(userID), p.instance).Err(); err != nil {
		return fmt.Errorf("mark %s offline: %w", userID, err)
	}
	return nil
}

// IsOnline reports whether the user has a live connection on any live
// instance.
func (p *Presence) IsOnline(ctx context.Context, userID string) (bool, error) {
	online, err := p.OnlineOf(ctx, []string{userID})
	return len(online) > 0, err
}

// OnlineOf returns which of userIDs are online, in their order, with one
// pipelined round trip.
func (p *Presence) OnlineOf(ctx context.Context, userIDs []string) ([]string, error) {
	at, err := p.InstancesOf(ctx, userIDs)
	if err != nil {
		return nil, err
	}
	var online []string
	for i, ins := range at {
		if len(ins) > 0 {
			online = append(online, userIDs[i])
		}
	}
	return online, nil
}

// InstancesOf returns, for each of userIDs in order, the live instances
// (presence members) holding a connection of the user, with one pipelined
// round trip; nil for a user who is offline.
func (p *Presence) InstancesOf(ctx context.Context, userIDs []string) ([][]string, error) {
	if len(userIDs) == 0 {
		return nil, nil
	}
	cmds := make([]*redis.StringSliceCmd, len(userIDs))
	_, err := p.rdb.Pipelined(ctx, func(pipe redis.Pipeliner) error {
		for i, u := range userIDs {
			cmds[i] = pipe.SMembers(ctx, p.keys.Online(u))
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("presence of %d users: %w", len(userIDs), err)
	}
	out := make([][]string, len(userIDs))
	for i, c := range cmds {
		ins := c.Val()
		if p.live != nil {
			kept := ins[:0]
			for _, in := range ins {
				if p.live(ctx, in) {
					kept = append(kept, in)
				}
			}
			ins = kept
		}
		if len(ins) > 0 {
			out[i] = ins
		}
	}
	return out, nil
}
