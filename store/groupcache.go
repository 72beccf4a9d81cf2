package store

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/nexo-im/nexo/domain"
)

// GroupCache is the Redis side of the group member cache and the per-group
// management lock (docs/groups.md).
//
// The cache of a group is one hash, Keys.GroupMembers(group_id)
// ("{prefix}:group:members:{group_id}"), with two fields: v, a version token,
// and d, the encoded GroupState. Readers compare v with the version of what
// they hold (a process keeps decoded states locally), so an invalidation is
// seen by every process on its next lookup. Filling is a compare-and-set on
// v, which closes the classic race of a reader that loaded the database
// before a change and writes the stale state after the change's
// invalidation: the invalidation replaced v, so the stale write is refused.
// Version tokens are random, never reused, so a key that expired and came
// back cannot make an old token match again.
type GroupCache struct {
	rdb  redis.UniversalClient
	keys Keys
	ttl  time.Duration
	// versions batches concurrent Version reads: every group send and
	// every group fanout makes one, so under load they share round trips.
	versions *domain.GroupCommit[string, string]
}

// versionBatch bounds the HGETs of one pipelined round trip.
const versionBatch = 256

// NewGroupCache returns the cache on rdb with keys under keys.Prefix; ttl
// (group.member_cache_ttl) bounds how long an entry lives.
func NewGroupCache(rdb redis.UniversalClient, keys Keys, ttl time.Duration) *GroupCache {
	c := &GroupCache{rdb: rdb, keys: keys, ttl: ttl}
	c.versions = domain.NewGroupCommit(versionBatch, c.readVersions)
	return c
}

// readScript returns {v, d}, creating v first when the hash has none, so a
// reader always gets a version to fill against. KEYS: cache. ARGV: new
// token, ttl ms.
var readScript = redis.NewScript(`
local v = redis.call('HGET', KEYS[1], 'v')
if not v then
  v = ARGV[1]
  redis.call('HSET', KEYS[1], 'v', v)
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
end
local d = redis.call('HGET', KEYS[1], 'd')
return {v, d or ''}
`)

// fillScript stores d only if v is still the version the reader got.
// ARGV: version, data, ttl ms.
var fillScript = redis.NewScript(`
if redis.call('HGET', KEYS[1], 'v') == ARGV[1] then
  redis.call('HSET', KEYS[1], 'd', ARGV[2])
  redis.call('PEXPIRE', KEYS[1], ARGV[3])
  return 1
end
return 0
`)

// invalidateScript replaces the version and drops the data. ARGV: new
// token, ttl ms.
var invalidateScript = redis.NewScript(`
redis.call('HSET', KEYS[1], 'v', ARGV[1])
redis.call('HDEL', KEYS[1], 'd')
redis.call('PEXPIRE', KEYS[1], ARGV[2])
return 1
`)

func newToken() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// Version returns the group's current cache version, "" when it has none:
// the check a process makes before trusting its local copy. One HGET, sent
// after the call began (so an invalidation that returned before it is
// seen); calls made while another's read is in flight go together in the
// next round trip, one HGET per distinct group. Errors are Redis's.
func (c *GroupCache) Version(ctx context.Context, groupID string) (string, error) {
	v, err := c.versions.Do(ctx, groupID)
	if err != nil {
		return "", fmt.Errorf("group cache version %s: %w", groupID, err)
	}
	return v, nil
}

// readVersions reads the version of each group of batch: alone, one HGET;
// else one pipeline (a cluster client splits it by slot).
func (c *GroupCache) readVersions(ctx context.Context, batch []*domain.Call[string, string]) {
	if len(batch) == 1 {
		batch[0].Res, batch[0].Err = versionOf(c.rdb.HGet(ctx, c.keys.GroupMembers(batch[0].Req), "v"))
		return
	}
	cmds := make(map[string]*redis.StringCmd, len(batch))
	pipe := c.rdb.Pipeline()
	for _, call := range batch {
		if cmds[call.Req] == nil {
			cmds[call.Req] = pipe.HGet(ctx, c.keys.GroupMembers(call.Req), "v")
		}
	}
	_, _ = pipe.Exec(ctx) // each command carries its own error
	for _, call := range batch {
		call.Res, call.Err = versionOf(cmds[call.Req])
	}
}

// versionOf is an HGET v's answer: "" for a hash (or field) that is not there.
func versionOf(cmd *redis.StringCmd) (string, error) {
	v, err := cmd.Result()
	if errors.Is(err, redis.Nil) {
		return "", nil
	}
	return v, err
}

// Read returns the group's cache version and its state; st is nil when the
// cache holds none, and the caller loads the database and calls Fill with
// this version.
func (c *GroupCache) Read(ctx context.Context, groupID string) (version string, st *GroupState, err error) {
	res, err := readScript.Run(ctx, c.rdb, []string{c.keys.GroupMembers(groupID)}, newToken(), c.ttl.Milliseconds()).StringSlice()
	if err != nil {
		return "", nil, fmt.Errorf("group cache read %s: %w", groupID, err)
	}
	if len(res) != 2 {
		return "", nil, fmt.Errorf("group cache read %s: unexpected reply %q", groupID, res)
	}
	if res[1] == "" {
		return res[0], nil, nil
	}
	st, err = DecodeGroupState(res[1])
	if err != nil {
		return "", nil, fmt.Errorf("group cache read %s: %w", groupID, err)
	}
	return res[0], st, nil
}

// Fill stores st as the group's cached state if the version is still
// version, and reports whether it did (false: a change invalidated the
// cache since Read, and st may be stale).
func (c *GroupCache) Fill(ctx context.Context, groupID, version string, st *GroupState) (bool, error) {
	n, err := fillScript.Run(ctx, c.rdb, []string{c.keys.GroupMembers(groupID)}, version, EncodeGroupState(st), c.ttl.Milliseconds()).Int()
	if err != nil {
		return false, fmt.Errorf("group cache fill %s: %w", groupID, err)
	}
	return n == 1, nil
}

// Invalidate drops the group's cached state and gives it a new version, so
// every process reloads on its next lookup. Membership changes call it
// after their database commit and before they return.
func (c *GroupCache) Invalidate(ctx context.Context, groupID string) error {
	err := invalidateScript.Run(ctx, c.rdb, []string{c.keys.GroupMembers(groupID)}, newToken(), c.ttl.Milliseconds()).Err()
	if err != nil {
		return fmt.Errorf("group cache invalidate %s: %w", groupID, err)
	}
	return nil
}

// setRecvMsgOptScript rewrites the recv_msg_opt (the fifth number, after
// which a line may hold mute_until) of one member's line of the cached
// state in place, under a new version, and
// returns that version; "" when nothing is cached or the user has no line
// (the next reader loads the database anyway). KEYS: cache. ARGV: "\n" +
// user_id + " ", new value, new token, ttl ms.
var setRecvMsgOptScript = redis.NewScript(`
local d = redis.call('HGET', KEYS[1], 'd')
if not d then return '' end
local i = string.find(d, ARGV[1], 1, true)
if not i then return '' end
local j = string.find(d, '\n', i + 1, true) or (#d + 1)
local line = string.sub(d, i + 1, j - 1)
local parts = {}
for p in string.gmatch(line, '[^ ]+') do parts[#parts + 1] = p end
if #parts < 6 then return '' end
parts[6] = ARGV[2]
d = string.sub(d, 1, i) .. table.concat(parts, ' ') .. string.sub(d, j)
redis.call('HSET', KEYS[1], 'v', ARGV[3], 'd', d)
redis.call('PEXPIRE', KEYS[1], ARGV[4])
return ARGV[3]
`)

// SetRecvMsgOpt changes one member's recv_msg_opt in the cached state in
// place: the group's member list is not dropped, so no
// process reloads it from the database; each sees the new version and
// re-reads the patched copy from Redis, and a fill racing the change is
// refused as with Invalidate (the version changed). It returns the new
// version, or "" when nothing was cached for the group or the user is not
// in it (nothing to patch; the next load reads the database). Call it after
// the setting is committed.
func (c *GroupCache) SetRecvMsgOpt(ctx context.Context, groupID, userID string, opt int) (string, error) {
	v, err := setRecvMsgOptScript.Run(ctx, c.rdb, []string{c.keys.GroupMembers(groupID)},
		"\n"+userID+" ", strconv.Itoa(opt), newToken(), c.ttl.Milliseconds()).Text()
	if err != nil {
		return "", fmt.Errorf("group cache set recv_msg_opt %s/%s: %w", groupID, userID, err)
	}
	return v, nil
}

// unlockScript deletes the lock only if it still holds the caller's token.
var unlockScript = redis.NewScript(`
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
`)

// TryLock takes the management lock of a group
// ("{prefix}:group:lock:{group_id}") for ttl if it is free, and returns the
// token that releases it; ok is false when another operation holds it.
func (c *GroupCache) TryLock(ctx context.Context, groupID string, ttl time.Duration) (token string, ok bool, err error) {
	token = newToken()
	ok, err = c.rdb.SetNX(ctx, c.keys.Key("group", "lock", groupID), token, ttl).Result()
	if err != nil {
		return "", false, fmt.Errorf("group lock %s: %w", groupID, err)
	}
	return token, ok, nil
}

// Unlock releases the lock if token still holds it (it may have expired and
// been taken by another operation, which keeps it).
func (c *GroupCache) Unlock(ctx context.Context, groupID, token string) error {
	if err := unlockScript.Run(ctx, c.rdb, []string{c.keys.Key("group", "lock", groupID)}, token).Err(); err != nil {
		return fmt.Errorf("group unlock %s: %w", groupID, err)
	}
	return nil
}

// groupWire is the group part of an encoded state.
type groupWire struct {
	ID            string `json:"id"`
	Name          string `json:"name"`
	Introduction  string `json:"introduction"`
	Avatar        string `json:"avatar"`
	Status        int    `json:"status"`
	CreatorUserID string `json:"creator_user_id"`
	OwnerUserID   string `json:"owner_user_id"`
	GroupType     int    `json:"group_type"`
	JoinPolicy    string `json:"join_policy"`
	InvitePerm    string `json:"invite_permission,omitempty"`
	Muted         bool   `json:"muted,omitempty"`
	CreatedAt     int64  `json:"created_at"`
	UpdatedAt     int64  `json:"updated_at"`
}

// EncodeGroupState encodes st compactly: the group as one JSON line, then
// one line per member "user_id role status join_seq cap_seq recv_msg_opt
// mute_until" separated by spaces (mute_until is optional when decoding,
// and a decoder that predates it ignores it) (user IDs never contain spaces or newlines), which a
// 10,000-member group decodes in a few milliseconds.
func EncodeGroupState(st *GroupState) string {
	g := st.Group
	head, _ := json.Marshal(groupWire{ID: g.ID, Name: g.Name, Introduction: g.Introduction, Avatar: g.Avatar,
		Status: int(g.Status), CreatorUserID: g.CreatorUserID, OwnerUserID: g.OwnerUserID, GroupType: g.GroupType,
		JoinPolicy: g.JoinPolicy, InvitePerm: g.InvitePermission, Muted: g.Muted, CreatedAt: g.CreatedAt, UpdatedAt: g.UpdatedAt})
	var b bytes.Buffer
	b.Grow(len(head) + 40*len(st.Members))
	b.Write(head)
	var num [20]byte
	for id, m := range st.Members {
		b.WriteByte('\n')
		b.WriteString(id)
		for _, v := range [...]int64{int64(m.Role), int64(m.Status), m.JoinSeq, m.CapSeq, int64(m.RecvMsgOpt), m.MuteUntil} {
			b.WriteByte(' ')
			b.Write(strconv.AppendInt(num[:0], v, 10))
		}
	}
	return b.String()
}

// DecodeGroupState decodes what EncodeGroupState wrote.
func DecodeGroupState(s string) (*GroupState, error) {
	head, rest, _ := strings.Cut(s, "\n")
	var g groupWire
	if err := json.Unmarshal([]byte(head), &g); err != nil {
		return nil, fmt.Errorf("decode group state: %w", err)
	}
	st := &GroupState{
		Group: domain.Group{ID: g.ID, Name: g.Name, Introduction: g.Introduction, Avatar: g.Avatar,
			Status: domain.GroupStatus(g.Status), CreatorUserID: g.CreatorUserID, OwnerUserID: g.OwnerUserID,
			GroupType: g.GroupType, JoinPolicy: g.JoinPolicy, InvitePermission: g.InvitePerm, Muted: g.Muted, CreatedAt: g.CreatedAt, UpdatedAt: g.UpdatedAt},
		Members: make(map[string]MemberState, strings.Count(rest, "\n")+1),
	}
	for line := range strings.SplitSeq(rest, "\n") {
		if line == "" {
			continue
		}
		id, fields, ok := strings.Cut(line, " ")
		var v [6]int64
		for i := range v {
			var f string
			if i == 5 && fields == "" {
				break // written before mute_until
			}
			f, fields, _ = strings.Cut(fields, " ")
			n, err := strconv.ParseInt(f, 10, 64)
			if err != nil || !ok {
				return nil, fmt.Errorf("decode group state: bad member line %q", line)
			}
			v[i] = n
		}
		st.Members[id] = MemberState{Role: domain.RoleLevel(v[0]), Status: domain.MemberStatus(v[1]),
			JoinSeq: v[2], CapSeq: v[3], RecvMsgOpt: int(v[4]), MuteUntil: v[5]}
	}
	return st, nil
}
