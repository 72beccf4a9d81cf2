package store

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/nexo-im/nexo/domain"
)

// Presence is the one record of who is connected, and where, shared by
// every instance. Per user, two keys (the braces are a Redis Cluster hash
// tag: a user's keys share a slot, so one script may touch both):
//
//   - "<prefix>:sessions:{<user_id>}", a hash with one field per live
//     WebSocket connection: conn_id → "<platform_id>:<f|b>:<instance>",
//     where b means the client said it is in the background (WS 1104) and
//     instance is the incarnation ("id#epoch") holding the connection. Its
//     TTL is ws.presence_ttl.
//   - "<prefix>:last_seen:{<user_id>}", the Unix ms of the user's last
//     disconnect, kept 30 days.
//
// The instance holding a connection writes its field: Connect when it
// registers, SetBackground on WS 1104, Disconnect when it closes, and
// Refresh, once per ws.ping_interval for every connection it holds, which
// renews the TTL and writes back a field Redis lost. Connect and
// Disconnect report a user's first connection and last disconnect across
// all instances (user_online / user_offline).
//
// It is read for routing (InstancesOf: which instances to publish a push
// to, and whether a user is online anywhere) and for lookups (Lookup:
// platforms, foreground, last_seen for GET /user/presence, /api/presence
// and the offline-push rule).
//
// A crashed instance's fields stay until the key expires, which does not
// happen while another instance keeps renewing the user's key. With a
// liveness check (WithLive) routing counts an instance's fields only while
// the instance is live, so they stop counting when its membership lapses
// (cluster.instance_ttl); Lookup counts them until the key expires.
//
// Upgrading from the release that kept routing in a second record: that
// release also wrote "<prefix>:online:<user_id>", a set of the
// incarnations holding a connection of the user, and wrote its consumer
// name, not its incarnation, as the instance of a field. InstancesOf reads
// the set too, so this release routes to users connected to an instance of
// the previous one during a rolling upgrade (the previous release does not
// see connections on instances of this one: those users get what they
// missed by the resend on reconnect, or by pulling). Nothing writes the set
// any more; the read can go in the next release.
type Presence struct {
	rdb      redis.UniversalClient
	keys     Keys
	instance string
	ttl      time.Duration
	live     func(ctx context.Context, instance string) bool
}

// NewPresence returns the presence record on rdb with keys under
// keys.Prefix. instance names this process among the instances (its
// incarnation, Membership.Incarnation); ttl is ws.presence_ttl.
func NewPresence(rdb redis.UniversalClient, keys Keys, instance string, ttl time.Duration) *Presence {
	return &Presence{rdb: rdb, keys: keys, instance: instance, ttl: ttl}
}

// WithLive returns a copy of p whose InstancesOf counts an instance only
// while live(ctx, instance) is true (Membership.IsLive).
func (p *Presence) WithLive(live func(ctx context.Context, instance string) bool) *Presence {
	c := *p
	c.live = live
	return &c
}

// Session is one live connection as this instance holds it.
type Session struct {
	UserID     string
	ConnID     string
	PlatformID int
	Background bool
}

// connectScript adds a connection and reports whether it is the user's
// first (the hash had no other entry).
var connectScript = redis.NewScript(`
local before = redis.call('HLEN', KEYS[1])
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
redis.call('PEXPIRE', KEYS[1], ARGV[3])
if before == 0 then return 1 end
return 0`)

// disconnectScript removes a connection, stamps last_seen and reports
// whether it was the user's last.
var disconnectScript = redis.NewScript(`
local removed = redis.call('HDEL', KEYS[1], ARGV[1])
redis.call('SET', KEYS[2], ARGV[2], 'PX', ARGV[3])
if removed == 1 and redis.call('HLEN', KEYS[1]) == 0 then return 1 end
return 0`)

// lastSeenTTL bounds how long a last_seen stamp is kept.
const lastSeenTTL = 30 * 24 * time.Hour

// refreshBatch bounds the users one pipeline of Refresh renews.
const refreshBatch = 500

func (p *Presence) key(userID string) string { return p.keys.Key("sessions", "{"+userID+"}") }

func (p *Presence) lastSeenKey(userID string) string {
	return p.keys.Key("last_seen", "{"+userID+"}")
}

func (p *Presence) value(platformID int, background bool) string {
	state := "f"
	if background {
		state = "b"
	}
	return strconv.Itoa(platformID) + ":" + state + ":" + p.instance
}

// Connect records a connection (foreground) and reports whether the user
// had no other live connection (they came online).
func (p *Presence) Connect(ctx context.Context, userID, connID string, platformID int) (first bool, err error) {
	n, err := connectScript.Run(ctx, p.rdb, []string{p.key(userID)}, connID, p.value(platformID, false), p.ttl.Milliseconds()).Int()
	if err != nil {
		return false, fmt.Errorf("record session of %s: %w", userID, err)
	}
	return n == 1, nil
}

// SetBackground marks a connection backgrounded (or foreground again).
func (p *Presence) SetBackground(ctx context.Context, userID, connID string, platformID int, background bool) error {
	_, err := p.rdb.TxPipelined(ctx, func(tx redis.Pipeliner) error {
		tx.HSet(ctx, p.key(userID), connID, p.value(platformID, background))
		tx.PExpire(ctx, p.key(userID), p.ttl)
		return nil
	})
	if err != nil {
		return fmt.Errorf("set background of %s: %w", userID, err)
	}
	return nil
}

// refreshScript writes a user's fields (ARGV[2..]: conn_id, value pairs)
// and renews the key's TTL (ARGV[1], ms) at once, so the key never exists
// without its TTL.
var refreshScript = redis.NewScript(`
for i = 2, #ARGV, 2 do redis.call('HSET', KEYS[1], ARGV[i], ARGV[i + 1]) end
redis.call('PEXPIRE', KEYS[1], ARGV[1])
return 0`)

// Refresh writes the fields of sessions (every connection this instance
// holds) and renews their users' TTL, one script per user in one pipeline
// per 500 users. Writing the fields back, not only the TTL, restores what
// Redis lost (a failover, a restart) within one call. The caller must not
// let a session's Disconnect or SetBackground run during the call, or it
// may write back an entry just removed or changed. The error is the first
// failure; the other users are still renewed.
func (p *Presence) Refresh(ctx context.Context, sessions []Session) error {
	byUser := map[string][]any{}
	for _, s := range sessions {
		args := byUser[s.UserID]
		if args == nil {
			args = []any{p.ttl.Milliseconds()}
		}
		byUser[s.UserID] = append(args, s.ConnID, p.value(s.PlatformID, s.Background))
	}
	users := make([]string, 0, len(byUser))
	for u := range byUser {
		users = append(users, u)
	}
	var first error
	for batch := range slices.Chunk(users, refreshBatch) {
		pipe := p.rdb.Pipeline()
		cmds := make([]*redis.Cmd, len(batch))
		for i, u := range batch {
			cmds[i] = refreshScript.EvalSha(ctx, pipe, []string{p.key(u)}, byUser[u]...)
		}
		_, _ = pipe.Exec(ctx) // each command carries its own error
		for i, cmd := range cmds {
			err := cmd.Err()
			if redis.HasErrorPrefix(err, "NOSCRIPT") {
				// Redis lost its script cache (restart, SCRIPT FLUSH): Run
				// loads the script again.
				err = refreshScript.Run(ctx, p.rdb, []string{p.key(batch[i])}, byUser[batch[i]]...).Err()
			}
			if err != nil && first == nil {
				first = fmt.Errorf("refresh the sessions of %s: %w", batch[i], err)
			}
		}
	}
	return first
}

// Disconnect removes a connection, records last_seen and reports whether
// it was the user's last (they went offline).
func (p *Presence) Disconnect(ctx context.Context, userID, connID string) (last bool, err error) {
	now := strconv.FormatInt(time.Now().UnixMilli(), 10)
	n, err := disconnectScript.Run(ctx, p.rdb, []string{p.key(userID), p.lastSeenKey(userID)},
		connID, now, lastSeenTTL.Milliseconds()).Int()
	if err != nil {
		return false, fmt.Errorf("remove session of %s: %w", userID, err)
	}
	return n == 1, nil
}

// UserPresence is one user's presence.
type UserPresence struct {
	UserID string
	Online bool
	// Platforms lists the platform ids of live connections, ascending,
	// without repeats.
	Platforms []int
	// Foreground: at least one connection is not backgrounded.
	Foreground bool
	// LastSeen is the Unix ms of the last disconnect (0 if unknown).
	LastSeen int64
}

// Lookup returns the presence of each of userIDs, in order, with one
// pipelined round trip.
func (p *Presence) Lookup(ctx context.Context, userIDs []string) ([]UserPresence, error) {
	if len(userIDs) == 0 {
		return nil, nil
	}
	conns := make([]*redis.MapStringStringCmd, len(userIDs))
	seen := make([]*redis.StringCmd, len(userIDs))
	_, err := p.rdb.Pipelined(ctx, func(pipe redis.Pipeliner) error {
		for i, u := range userIDs {
			conns[i] = pipe.HGetAll(ctx, p.key(u))
			seen[i] = pipe.Get(ctx, p.lastSeenKey(u))
		}
		return nil
	})
	if err != nil && !errors.Is(err, redis.Nil) {
		return nil, fmt.Errorf("presence of %d users: %w", len(userIDs), err)
	}
	out := make([]UserPresence, len(userIDs))
	for i, u := range userIDs {
		up := UserPresence{UserID: u}
		plats := map[int]bool{}
		for _, v := range conns[i].Val() {
			parts := strings.SplitN(v, ":", 3)
			pl, _ := strconv.Atoi(parts[0])
			if domain.Platform(pl).Valid() {
				plats[pl] = true
			}
			if len(parts) > 1 && parts[1] == "f" {
				up.Foreground = true
			}
		}
		for pl := range plats {
			up.Platforms = append(up.Platforms, pl)
		}
		slices.Sort(up.Platforms)
		up.Online = len(up.Platforms) > 0
		up.LastSeen, _ = strconv.ParseInt(seen[i].Val(), 10, 64)
		out[i] = up
	}
	return out, nil
}

// InstancesOf returns, for each of userIDs in order, the distinct
// instances holding a connection of the user (only live ones, with
// WithLive), with one pipelined round trip; nil for a user connected
// nowhere.
func (p *Presence) InstancesOf(ctx context.Context, userIDs []string) ([][]string, error) {
	if len(userIDs) == 0 {
		return nil, nil
	}
	conns := make([]*redis.StringSliceCmd, len(userIDs))
	legacy := make([]*redis.StringSliceCmd, len(userIDs))
	_, err := p.rdb.Pipelined(ctx, func(pipe redis.Pipeliner) error {
		for i, u := range userIDs {
			conns[i] = pipe.HVals(ctx, p.key(u))
			legacy[i] = pipe.SMembers(ctx, p.keys.Online(u))
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("presence of %d users: %w", len(userIDs), err)
	}
	out := make([][]string, len(userIDs))
	for i := range userIDs {
		var ins []string
		for _, v := range conns[i].Val() {
			if parts := strings.SplitN(v, ":", 3); len(parts) == 3 && !slices.Contains(ins, parts[2]) {
				ins = append(ins, parts[2])
			}
		}
		for _, in := range legacy[i].Val() {
			if !slices.Contains(ins, in) {
				ins = append(ins, in)
			}
		}
		if p.live != nil {
			ins = slices.DeleteFunc(ins, func(in string) bool { return !p.live(ctx, in) })
		}
		if len(ins) > 0 {
			out[i] = ins
		}
	}
	return out, nil
}
