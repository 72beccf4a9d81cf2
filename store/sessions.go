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

// Sessions records every live WebSocket connection for presence lookups
// (GET /user/presence, /api/presence), user_online/user_offline events and
// offline push, shared by all instances. Key "<prefix>:sessions:{<user_id>}"
// is a hash conn_id → "<platform_id>:<f|b>:<instance>" ("b": the client
// said it is in the background), with TTL ttl refreshed while a connection
// lives; "<prefix>:last_seen:{<user_id>}" holds the Unix ms of the user's
// last disconnect. The braces are a Redis Cluster hash tag: a user's two
// keys share a slot, so Disconnect's script may touch both. A crashed instance's entries disappear with the TTL.
// It complements Presence (online:{user_id}), which the push path reads.
type Sessions struct {
	rdb      redis.UniversalClient
	keys     Keys
	instance string
	ttl      time.Duration
}

// NewSessions returns the session store; instance names this process and
// ttl is ws.presence_ttl.
func NewSessions(rdb redis.UniversalClient, keys Keys, instance string, ttl time.Duration) *Sessions {
	return &Sessions{rdb: rdb, keys: keys, instance: instance, ttl: ttl}
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

func (s *Sessions) key(userID string) string { return s.keys.Key("sessions", "{"+userID+"}") }

func (s *Sessions) lastSeenKey(userID string) string {
	return s.keys.Key("last_seen", "{"+userID+"}")
}

func (s *Sessions) value(platformID int, background bool) string {
	state := "f"
	if background {
		state = "b"
	}
	return strconv.Itoa(platformID) + ":" + state + ":" + s.instance
}

// Connect records a connection (foreground) and reports whether the user
// had no other live connection (they came online).
func (s *Sessions) Connect(ctx context.Context, userID, connID string, platformID int) (first bool, err error) {
	n, err := connectScript.Run(ctx, s.rdb, []string{s.key(userID)}, connID, s.value(platformID, false), s.ttl.Milliseconds()).Int()
	if err != nil {
		return false, fmt.Errorf("record session of %s: %w", userID, err)
	}
	return n == 1, nil
}

// SetBackground marks a connection backgrounded (or foreground again).
func (s *Sessions) SetBackground(ctx context.Context, userID, connID string, platformID int, background bool) error {
	_, err := s.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.HSet(ctx, s.key(userID), connID, s.value(platformID, background))
		p.PExpire(ctx, s.key(userID), s.ttl)
		return nil
	})
	if err != nil {
		return fmt.Errorf("set background of %s: %w", userID, err)
	}
	return nil
}

// Refresh renews the TTL of the sessions of userIDs, in one pipeline (on
// Redis Cluster go-redis splits it by slot). The error is the first
// failure; the other users are still renewed.
func (s *Sessions) Refresh(ctx context.Context, userIDs []string) error {
	if len(userIDs) == 0 {
		return nil
	}
	_, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for _, u := range userIDs {
			p.PExpire(ctx, s.key(u), s.ttl)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("refresh %d users' sessions: %w", len(userIDs), err)
	}
	return nil
}

// Disconnect removes a connection, records last_seen and reports whether
// it was the user's last (they went offline).
func (s *Sessions) Disconnect(ctx context.Context, userID, connID string) (last bool, err error) {
	now := strconv.FormatInt(time.Now().UnixMilli(), 10)
	n, err := disconnectScript.Run(ctx, s.rdb, []string{s.key(userID), s.lastSeenKey(userID)},
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
func (s *Sessions) Lookup(ctx context.Context, userIDs []string) ([]UserPresence, error) {
	if len(userIDs) == 0 {
		return nil, nil
	}
	conns := make([]*redis.MapStringStringCmd, len(userIDs))
	seen := make([]*redis.StringCmd, len(userIDs))
	_, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, u := range userIDs {
			conns[i] = p.HGetAll(ctx, s.key(u))
			seen[i] = p.Get(ctx, s.lastSeenKey(u))
		}
		return nil
	})
	if err != nil && !errors.Is(err, redis.Nil) {
		return nil, fmt.Errorf("presence of %d users: %w", len(userIDs), err)
	}
	out := make([]UserPresence, len(userIDs))
	for i, u := range userIDs {
		p := UserPresence{UserID: u}
		plats := map[int]bool{}
		for _, v := range conns[i].Val() {
			parts := strings.SplitN(v, ":", 3)
			pl, _ := strconv.Atoi(parts[0])
			if domain.Platform(pl).Valid() {
				plats[pl] = true
			}
			if len(parts) > 1 && parts[1] == "f" {
				p.Foreground = true
			}
		}
		for pl := range plats {
			p.Platforms = append(p.Platforms, pl)
		}
		slices.Sort(p.Platforms)
		p.Online = len(p.Platforms) > 0
		p.LastSeen, _ = strconv.ParseInt(seen[i].Val(), 10, 64)
		out[i] = p
	}
	return out, nil
}

// Contacts answers "which of ids shares a conversation with userID": a
// single chat with at least one saved message, or a group in which both
// are active members. The result holds true for each such id.
type Contacts struct{ db *DB }

// NewContacts returns the contact check on db.
func NewContacts(db *DB) *Contacts { return &Contacts{db: db} }

// Shared reports which of ids share a conversation with userID.
func (c *Contacts) Shared(ctx context.Context, userID string, ids []string) (map[string]bool, error) {
	out := map[string]bool{}
	if len(ids) == 0 {
		return out, nil
	}
	byConv := make(map[string]string, len(ids))
	convs := make([]string, 0, len(ids))
	for _, id := range ids {
		cid := domain.SingleConversationID(userID, id)
		byConv[cid] = id
		convs = append(convs, cid)
	}
	var found []string
	err := c.db.Gorm.WithContext(ctx).Model(&seqConversationRow{}).
		Where("conversation_id IN ? AND max_seq > 0", convs).Pluck("conversation_id", &found).Error
	if err != nil {
		return nil, fmt.Errorf("shared single chats of %s: %w", userID, err)
	}
	for _, cid := range found {
		out[byConv[cid]] = true
	}
	var members []string
	err = c.db.Gorm.WithContext(ctx).Table("group_members AS a").
		Joins("JOIN group_members AS b ON a.group_id = b.group_id").
		Where("a.user_id = ? AND a.status = ? AND b.user_id IN ? AND b.status = ?", userID, int(domain.MemberNormal), ids, int(domain.MemberNormal)).
		Distinct().Pluck("b.user_id", &members).Error
	if err != nil {
		return nil, fmt.Errorf("shared groups of %s: %w", userID, err)
	}
	for _, m := range members {
		out[m] = true
	}
	return out, nil
}
