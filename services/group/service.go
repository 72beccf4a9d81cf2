// Package group is Nexo's group chat: the management rules behind the
// group routes of both APIs (gateway/routes: create, join, invite, quit,
// kick, transfer, roles, dismiss, update, info, members, list, join
// applications), the member lookups every group send and pull go through
// (CheckSend, Bounds; a two-level cache that every change invalidates), and
// the group fanout with its push strategies. Changes are also notification
// messages in the group conversation (msg_type 1501–1509), whose seqs order
// joins and departures against the chat. docs/groups.md describes the
// rules, the visibility model and the push strategy.
package group

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/nexo-im/nexo/configs"
	"github.com/nexo-im/nexo/domain"
	"github.com/nexo-im/nexo/store"
)

// Groups is the group storage the service needs (store.GroupRepo).
type Groups interface {
	SetMuted(ctx context.Context, groupID string, muted bool) error
	SetMuteUntil(ctx context.Context, groupID, userID string, until int64) error
	SetStatusFrom(ctx context.Context, groupID, userID string, from []domain.MemberStatus, status domain.MemberStatus) (bool, error)
	Create(ctx context.Context, g domain.Group, members []domain.GroupMember) (domain.Group, error)
	Get(ctx context.Context, groupID string) (domain.Group, error)
	Member(ctx context.Context, groupID, userID string) (domain.GroupMember, error)
	MembersOf(ctx context.Context, groupID string, userIDs []string) (map[string]domain.GroupMember, error)
	ListMembers(ctx context.Context, groupID string, offset, limit int) ([]domain.GroupMember, int64, error)
	ActiveCounts(ctx context.Context, groupIDs []string) (map[string]int, error)
	UserGroups(ctx context.Context, userID string, afterCreatedAt int64, afterID string, limit int) ([]domain.Group, error)
	AddMembers(ctx context.Context, groupID string, members []domain.GroupMember) error
	Deactivate(ctx context.Context, groupID string, userIDs []string, status domain.MemberStatus) ([]domain.GroupMember, error)
	SetCap(ctx context.Context, groupID string, userIDs []string, capSeq int64) error
	Reactivate(ctx context.Context, groupID string, previous []domain.GroupMember) error
	SetStatus(ctx context.Context, groupID string, status domain.GroupStatus) error
	Update(ctx context.Context, groupID string, u store.GroupUpdate) (domain.Group, error)
	Transfer(ctx context.Context, groupID, from, to string) error
	SetRole(ctx context.Context, groupID, userID string, role domain.RoleLevel) error
	Apply(ctx context.Context, a domain.GroupApplication) (domain.GroupApplication, bool, error)
	PendingApplication(ctx context.Context, groupID, userID string) (domain.GroupApplication, error)
	PendingApplications(ctx context.Context, groupID string, afterID int64, limit int) ([]domain.GroupApplication, error)
	AnswerApplication(ctx context.Context, groupID, userID, handler string, result domain.ApplicationStatus) error
}

// Users tells which user IDs are registered and whom they let add them to
// groups (store.UserRepo).
type Users interface {
	Existing(ctx context.Context, ids []string) (map[string]bool, error)
	// GroupInvites returns the choice of each of ids that exists.
	GroupInvites(ctx context.Context, ids []string) (map[string]domain.GroupInvites, error)
}

// SharedGroups tells which of ids are active members of a group userID is
// an active member of (store.Contacts).
type SharedGroups interface {
	SharedGroups(ctx context.Context, userID string, ids []string) (map[string]bool, error)
}

// Blockers tells which of users block userID (store.BlockRepo): a user who
// blocked the adder is not added by them.
type Blockers interface {
	BlockersOf(ctx context.Context, userID string, users []string) (map[string]bool, error)
}

// AddedLimit counts how often users are added to groups by someone else
// (limits.Added, limits.group_added), shared by every instance: nil, or
// too_many_requests with a retry-after naming the limit.
type AddedLimit interface {
	AllowAdded(ctx context.Context, userIDs []string) error
}

// Locker serializes the management operations of one group across
// processes (store.GroupCache).
type Locker interface {
	TryLock(ctx context.Context, groupID string, ttl time.Duration) (token string, ok bool, err error)
	Unlock(ctx context.Context, groupID, token string) error
}

// Service applies the group management rules (docs/groups.md): who may
// create, join, invite, quit, kick, transfer, set roles, dismiss and update,
// and in which order a change is written, announced and made visible.
//
// Every change of one group runs under that group's lock, so changes are
// applied and announced one at a time, in the order of their notification
// seqs. Sends never take the lock: they only read the member cache.
type Service struct {
	cfg      configs.Group
	groups   Groups
	users    Users
	shared   SharedGroups
	blocks   Blockers
	added    AddedLimit
	members  *Members
	locks    Locker
	notifier Notifier
	metrics  *serviceMetrics
	log      *slog.Logger
	words    WordFilter
}

// WordFilter is the operator's word filter (moderation.Filter): the value
// unchanged, masked (moderation.action mask) or a domain.ErrBlockedWord
// error naming field (refuse).
type WordFilter interface {
	Check(field, s string) (string, error)
}

// filterName applies the word filter to a group name (nil: not given).
func (s *Service) filterName(name *string) error {
	if s.words == nil || name == nil {
		return nil
	}
	v, err := s.words.Check("name", *name)
	if err != nil {
		return err
	}
	*name = v
	return nil
}

// Deps are the Service's collaborators; all are required except
// Registry, Shared (nil: a user whose group_invites is shared_groups
// accepts nobody), Blocks (nil: blocks do not refuse invitations) and
// Added (nil: no limit).
type Deps struct {
	Config   configs.Group
	Groups   Groups
	Users    Users
	Shared   SharedGroups
	Blocks   Blockers
	Added    AddedLimit
	Members  *Members
	Locks    Locker
	Notifier Notifier
	Log      *slog.Logger
	Registry prometheus.Registerer
	// Words, when set, filters group names at Create and Update; the
	// service ForApp returns is exempt (docs/moderation.md).
	Words WordFilter
}

// NewService returns the group management service.
func NewService(d Deps) *Service {
	return &Service{cfg: d.Config, groups: d.Groups, users: d.Users, shared: d.Shared, blocks: d.Blocks, added: d.Added, members: d.Members, locks: d.Locks,
		notifier: d.Notifier, metrics: newServiceMetrics(d.Registry), log: d.Log, words: d.Words}
}

// locked runs fn under the group's management lock, waiting up to
// group.lock_wait for it (then domain.ErrServerBusy). fn gets a context
// that is not cancelled with the request: once a change has begun it runs
// to its end (bounded by group.lock_ttl), so a client that hangs up never
// leaves a change half made.
func (s *Service) locked(ctx context.Context, groupID string, fn func(ctx context.Context) error) error {
	deadline := time.Now().Add(s.cfg.LockWait)
	wait := 2 * time.Millisecond
	var token string
	for {
		tok, ok, err := s.locks.TryLock(ctx, groupID, s.cfg.LockTTL)
		if err != nil {
			return fmt.Errorf("%w: %w", domain.ErrServerBusy, err)
		}
		if ok {
			token = tok
			break
		}
		if time.Now().After(deadline) {
			return domain.NewError(domain.ErrServerBusy, "another change of this group is in progress; retry")
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
		wait = min(2*wait, 50*time.Millisecond)
	}
	opCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.cfg.LockTTL)
	defer cancel()
	defer func() {
		if err := s.locks.Unlock(opCtx, groupID, token); err != nil {
			s.log.Warn("group unlock failed; the lock expires with group.lock_ttl", "group_id", groupID, "err", err)
		}
	}()
	return fn(opCtx)
}

// activeGroup returns the group for a change: domain.ErrGroupNotFound, or
// ErrGroupDismissed once dismissed (a dismissed group takes no changes).
func (s *Service) activeGroup(ctx context.Context, groupID string) (domain.Group, error) {
	g, err := s.groups.Get(ctx, groupID)
	if err != nil {
		return g, err
	}
	if g.Status != domain.GroupNormal {
		return g, fmt.Errorf("group %s: %w", groupID, domain.ErrGroupDismissed)
	}
	return g, nil
}

// actor returns the caller's member row if it is active:
// domain.ErrNotGroupMember or ErrMemberNotActive otherwise.
func (s *Service) actor(ctx context.Context, groupID, userID string) (domain.GroupMember, error) {
	m, err := s.groups.Member(ctx, groupID, userID)
	if err != nil {
		return m, err
	}
	if m.Status != domain.MemberNormal {
		return m, fmt.Errorf("%s in group %s: %w", userID, groupID, domain.ErrMemberNotActive)
	}
	return m, nil
}

// render is GroupOf with the group's effective invite permission (its
// own, else group.invite_permission).
func (s *Service) render(g domain.Group, memberCount int) GroupJSON {
	g.InvitePermission = s.invitePermission(g)
	return GroupOf(g, memberCount)
}

// invitePermission is who may add others to g: its own setting, else the
// server's group.invite_permission.
func (s *Service) invitePermission(g domain.Group) string {
	if g.InvitePermission != "" {
		return g.InvitePermission
	}
	return s.cfg.InvitePermission
}

// requireRole refuses with forbidden unless m has at least role.
func requireRole(m domain.GroupMember, role domain.RoleLevel, what string) error {
	if m.RoleLevel < role {
		return domain.NewError(domain.ErrForbidden, what)
	}
	return nil
}

// authorize returns group groupID and caller's member row when the group
// is active and caller an active member with at least role: otherwise the
// errors of activeGroup and actor, or forbidden with what.
func (s *Service) authorize(ctx context.Context, groupID, caller string, role domain.RoleLevel, what string) (domain.Group, domain.GroupMember, error) {
	g, err := s.activeGroup(ctx, groupID)
	if err != nil {
		return g, domain.GroupMember{}, err
	}
	m, err := s.actor(ctx, groupID, caller)
	if err != nil {
		return g, m, err
	}
	return g, m, requireRole(m, role, what)
}

// requireUsers refuses with user_not_found unless every ID is registered.
func (s *Service) requireUsers(ctx context.Context, field string, ids []string) error {
	found, err := s.users.Existing(ctx, ids)
	if err != nil {
		return fmt.Errorf("look up users: %w", err)
	}
	var missing []string
	for _, id := range ids {
		if !found[id] {
			missing = append(missing, id)
		}
	}
	if len(missing) == 0 {
		return nil
	}
	if len(missing) > 10 {
		missing = append(missing[:10], fmt.Sprintf("and %d more", len(missing)-10))
	}
	return domain.NewError(domain.ErrUserNotFound, field+": no such user: "+strings.Join(missing, ", "))
}

// distinct returns ids without repeats, in first-seen order, without skip.
func distinct(ids []string, skip string) []string {
	seen := make(map[string]bool, len(ids))
	out := make([]string, 0, len(ids))
	for _, id := range ids {
		if id != skip && !seen[id] {
			seen[id] = true
			out = append(out, id)
		}
	}
	return out
}

// checkCount refuses more IDs than group.max_ids_per_request.
func (s *Service) checkCount(field string, n int) error {
	if n > s.cfg.MaxIDsPerRequest {
		return domain.NewError(domain.ErrInvalidArgument, fmt.Sprintf("%s: at most %d users per request (got %d)", field, s.cfg.MaxIDsPerRequest, n))
	}
	return nil
}

// change runs a change that is written before it is announced (quit, kick,
// transfer, role, dismiss, update): apply commits it, the cache is
// invalidated so sends and fanouts see it at once, then the notification
// is sent. If the notification cannot be sent the change is undone (and
// the cache invalidated again) and the error returned: a change is either
// made and announced, or not made. apply returning done = false means
// there was nothing to change (no notification).
func (s *Service) change(ctx context.Context, groupID string, apply func() (done bool, err error), undo func() error,
	announce func() (int64, error)) (int64, error) {
	done, err := apply()
	if err != nil || !done {
		return 0, err
	}
	if err := s.members.Invalidate(ctx, groupID); err != nil {
		// Caches may still show the old state; put the database back to
		// match them rather than leave a change no send check sees.
		s.rollback(ctx, groupID, undo)
		return 0, fmt.Errorf("%w: invalidate group %s: %w", domain.ErrServerBusy, groupID, err)
	}
	seq, err := announce()
	if err != nil {
		s.rollback(ctx, groupID, undo)
		return 0, err
	}
	return seq, nil
}

func (s *Service) rollback(ctx context.Context, groupID string, undo func() error) {
	s.metrics.undone.Inc()
	if err := undo(); err != nil {
		s.log.Error("group change could not be undone", "group_id", groupID, "err", err)
	}
	if err := s.members.Invalidate(ctx, groupID); err != nil {
		s.log.Error("group cache invalidation after undo failed", "group_id", groupID, "err", err)
	}
}

// invalidateAdded invalidates after members were added. The database
// already holds them; a failure is reported as server_busy, and sends of
// the new members may be refused until the cache entry expires
// (group.member_cache_ttl) — the safe direction.
func (s *Service) invalidateAdded(ctx context.Context, groupID string) error {
	if err := s.members.Invalidate(ctx, groupID); err != nil {
		return fmt.Errorf("%w: invalidate group %s: %w", domain.ErrServerBusy, groupID, err)
	}
	return nil
}
