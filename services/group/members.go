package group

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"time"

	lru "github.com/hashicorp/golang-lru/v2/expirable"
	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/sync/singleflight"

	"github.com/nexo-im/nexo/configs"
	"github.com/nexo-im/nexo/domain"
	"github.com/nexo-im/nexo/store"
)

// StateLoader loads a group's state from the database (store.GroupRepo);
// domain.ErrGroupNotFound for an unknown group.
type StateLoader interface {
	State(ctx context.Context, groupID string) (*store.GroupState, error)
}

// Cache is the Redis member cache (store.GroupCache): versioned, filled by
// compare-and-set, invalidated by replacing the version.
type Cache interface {
	Version(ctx context.Context, groupID string) (string, error)
	Read(ctx context.Context, groupID string) (version string, st *store.GroupState, err error)
	Fill(ctx context.Context, groupID, version string, st *store.GroupState) (bool, error)
	Invalidate(ctx context.Context, groupID string) error
	SetRecvMsgOpt(ctx context.Context, groupID, userID string, opt int) (version string, err error)
}

// Members answers who is in a group, for every group send (CheckSend),
// every group pull (Bounds) and every group fanout, from a two-level cache:
// a decoded copy per process (LRU, group.local_cache_ttl) validated on each
// use against the Redis version (one HGET), then the Redis copy
// group:members:{group_id}, then the database. Invalidate, called by every
// member change after its commit and before it returns, replaces the
// Redis version, so the next lookup in any process sees the change: a
// kicked member's next send is refused. If Redis is unreachable lookups go
// to the database and nothing is cached.
//
// Members implements chat.GroupGate and chat.GroupBounds.
type Members struct {
	db      StateLoader
	cache   Cache
	local   *lru.LRU[string, *snapshot] // nil: group.local_cache_ttl is 0
	loads   singleflight.Group
	metrics *cacheMetrics
	log     *slog.Logger
}

// snapshot is one decoded state and the cache version it was read under;
// state nil means the group did not exist at that version.
type snapshot struct {
	version string
	state   *store.GroupState
	active  int // active members
}

func newSnapshot(version string, st *store.GroupState) *snapshot {
	s := &snapshot{version: version, state: st}
	if st != nil {
		for _, m := range st.Members {
			if m.Active() {
				s.active++
			}
		}
	}
	return s
}

// NewMembers returns the member lookups over the database and the Redis
// cache; cfg is the group section (local cache size and TTL); reg may be nil.
func NewMembers(db StateLoader, cache Cache, cfg configs.Group, reg prometheus.Registerer, log *slog.Logger) *Members {
	m := &Members{db: db, cache: cache, metrics: newCacheMetrics(reg), log: log}
	if cfg.LocalCacheTTL > 0 {
		m.local = lru.NewLRU[string, *snapshot](cfg.LocalCacheSize, nil, cfg.LocalCacheTTL)
	}
	return m
}

// get returns the group's current snapshot (state nil for an unknown
// group). Errors are the database's or Redis's, both transient.
func (m *Members) get(ctx context.Context, groupID string) (*snapshot, error) {
	v, err := m.cache.Version(ctx, groupID)
	if err != nil {
		m.log.Debug("group member cache unreachable; reading the database", "group_id", groupID, "err", err)
		return m.uncached(ctx, groupID)
	}
	if v != "" && m.local != nil {
		if s, ok := m.local.Get(groupID); ok && s.version == v {
			m.metrics.lookups.WithLabelValues("local").Inc()
			return s, nil
		}
	}
	// Loads are shared per observed version: a lookup that saw a newer
	// version never takes the result of a load that began before it.
	res, err, _ := m.loads.Do(groupID+"\x00"+v, func() (any, error) { return m.load(ctx, groupID) })
	if err != nil {
		return nil, err
	}
	return res.(*snapshot), nil
}

func (m *Members) load(ctx context.Context, groupID string) (*snapshot, error) {
	v, st, err := m.cache.Read(ctx, groupID)
	if err != nil {
		m.log.Debug("group member cache unreachable; reading the database", "group_id", groupID, "err", err)
		return m.uncached(ctx, groupID)
	}
	if st != nil {
		m.metrics.lookups.WithLabelValues("redis").Inc()
		return m.keep(groupID, newSnapshot(v, st)), nil
	}
	m.metrics.lookups.WithLabelValues("db").Inc()
	st, err = m.db.State(ctx, groupID)
	switch {
	case errors.Is(err, domain.ErrGroupNotFound):
		// Kept locally only, under the version: creating the group
		// invalidates, which replaces the version.
		return m.keep(groupID, newSnapshot(v, nil)), nil
	case err != nil:
		return nil, err
	}
	if _, err := m.cache.Fill(ctx, groupID, v, st); err != nil {
		m.log.Warn("group member cache fill failed", "group_id", groupID, "err", err)
	}
	return m.keep(groupID, newSnapshot(v, st)), nil
}

func (m *Members) keep(groupID string, s *snapshot) *snapshot {
	if m.local != nil {
		m.local.Add(groupID, s)
	}
	return s
}

func (m *Members) uncached(ctx context.Context, groupID string) (*snapshot, error) {
	m.metrics.lookups.WithLabelValues("db_uncached").Inc()
	st, err := m.db.State(ctx, groupID)
	if errors.Is(err, domain.ErrGroupNotFound) {
		return newSnapshot("", nil), nil
	}
	if err != nil {
		return nil, err
	}
	return newSnapshot("", st), nil
}

// Invalidate makes every process reload the group on its next lookup. It
// must succeed before a member change returns; the error is Redis's.
func (m *Members) Invalidate(ctx context.Context, groupID string) error {
	var err error
	for attempt := 0; attempt < 3; attempt++ {
		if err = m.cache.Invalidate(ctx, groupID); err == nil {
			break
		}
	}
	if m.local != nil {
		m.local.Remove(groupID)
	}
	m.metrics.invalidations.Inc()
	return err
}

// SetRecvMsgOpt makes a member's new recv_msg_opt (already committed to the
// database) take effect for fanouts at once, without dropping the group's
// member list: the cached state is patched in place in
// Redis under a new version, and this process's copy is updated in place
// too, so no process reloads the list from the database. When Redis holds
// no state for the group (or not this member) there is nothing to patch and
// it falls back to Invalidate, which then costs no reload either.
func (m *Members) SetRecvMsgOpt(ctx context.Context, groupID, userID string, opt int) error {
	v, err := m.cache.SetRecvMsgOpt(ctx, groupID, userID, opt)
	if err != nil || v == "" {
		return m.Invalidate(ctx, groupID)
	}
	m.metrics.patches.Inc()
	if m.local == nil {
		return nil
	}
	old, ok := m.local.Get(groupID)
	if !ok || old.state == nil {
		m.local.Remove(groupID)
		return nil
	}
	// Readers hold the old snapshot without a lock: patch a copy.
	st := &store.GroupState{Group: old.state.Group, Members: maps.Clone(old.state.Members)}
	if ms, ok := st.Members[userID]; ok {
		ms.RecvMsgOpt = opt
		st.Members[userID] = ms
	}
	m.keep(groupID, newSnapshot(v, st))
	return nil
}

// CheckSend implements chat.GroupGate: nil when userID is an active member
// of a group whose status is normal. Otherwise domain.ErrGroupNotFound,
// ErrNotGroupMember (never joined), ErrMemberNotActive (quit or kicked) or
// ErrGroupDismissed, in that order; then forbidden for a muted member, or
// a plain member of a muted group. It reads only the cache and writes
// nothing: a mute costs a send nothing more.
func (m *Members) CheckSend(ctx context.Context, groupID, userID string) error {
	s, err := m.get(ctx, groupID)
	if err != nil {
		return fmt.Errorf("check sender %s in group %s: %w", userID, groupID, err)
	}
	mem, err := s.activeMember(groupID, userID)
	if err != nil {
		return err
	}
	if s.state.Group.Status != domain.GroupNormal {
		return fmt.Errorf("group %s: %w", groupID, domain.ErrGroupDismissed)
	}
	return checkMuted(s.state.Group, mem, time.Now())
}

// activeMember returns userID's state if it is an active member.
func (s *snapshot) activeMember(groupID, userID string) (store.MemberState, error) {
	if s.state == nil {
		return store.MemberState{}, fmt.Errorf("group %s: %w", groupID, domain.ErrGroupNotFound)
	}
	mem, ok := s.state.Members[userID]
	switch {
	case !ok:
		return mem, fmt.Errorf("%s in group %s: %w", userID, groupID, domain.ErrNotGroupMember)
	case !mem.Active():
		return mem, fmt.Errorf("%s in group %s: %w", userID, groupID, domain.ErrMemberNotActive)
	}
	return mem, nil
}

// Bounds implements chat.GroupBounds: the first seq userID may see in the
// group's conversation (its join_seq) and the last (its cap after quitting
// or being kicked; 0 = none). A member who left keeps read access up to
// its cap, as do all members of a dismissed group. Someone who never joined
// (or an unknown group) is domain.ErrNotConversationMember.
func (m *Members) Bounds(ctx context.Context, groupID, userID string) (minSeq, maxSeq int64, err error) {
	s, err := m.get(ctx, groupID)
	if err != nil {
		return 0, 0, fmt.Errorf("bounds of %s in group %s: %w", userID, groupID, err)
	}
	if s.state == nil {
		return 0, 0, fmt.Errorf("group %s: %w", groupID, domain.ErrNotConversationMember)
	}
	mem, ok := s.state.Members[userID]
	if !ok {
		return 0, 0, fmt.Errorf("%s in group %s: %w", userID, groupID, domain.ErrNotConversationMember)
	}
	if mem.Active() {
		return mem.JoinSeq, 0, nil
	}
	// An inactive member always has a cap (provisional, then its
	// notification's seq); never answer "no cap" for one.
	return mem.JoinSeq, max(mem.CapSeq, mem.JoinSeq), nil
}

// Group returns the group and its number of active members, from the
// cache; domain.ErrGroupNotFound for an unknown group.
func (m *Members) Group(ctx context.Context, groupID string) (domain.Group, int, error) {
	s, err := m.get(ctx, groupID)
	if err != nil {
		return domain.Group{}, 0, err
	}
	if s.state == nil {
		return domain.Group{}, 0, fmt.Errorf("group %s: %w", groupID, domain.ErrGroupNotFound)
	}
	return s.state.Group, s.active, nil
}

// CheckMember returns userID's role if it is an active member of the group
// (any group status), from the cache: domain.ErrGroupNotFound,
// ErrNotGroupMember or ErrMemberNotActive otherwise.
func (m *Members) CheckMember(ctx context.Context, groupID, userID string) (domain.RoleLevel, error) {
	s, err := m.get(ctx, groupID)
	if err != nil {
		return 0, err
	}
	mem, err := s.activeMember(groupID, userID)
	return mem.Role, err
}
