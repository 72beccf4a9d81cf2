package store

import (
	"context"
	"fmt"

	"gorm.io/gorm"

	"github.com/nexo-im/nexo/domain"
)

// GroupRepo owns groups and group_members, and the rows a membership implies
// in other tables: the member's visibility bounds in seq_users (min_seq =
// join_seq, max_seq = the cap after quitting or being kicked, 0 = none) and
// its conversations row (conversation_type 3). The rules (who may do what)
// are the caller's: the repository only writes what it is told, atomically.
// docs/groups.md describes the model.
type GroupRepo struct{ db *DB }

// NewGroupRepo returns a GroupRepo over db.
func NewGroupRepo(db *DB) *GroupRepo { return &GroupRepo{db: db} }

// rowChunk bounds the rows of one multi-row statement (placeholder limits).
const rowChunk = 500

// GroupState is what a send check, a pull's bounds and a fanout need of one
// group: the group and every member row ever written (quit and kicked
// members included, for their caps), keyed by user ID.
type GroupState struct {
	Group   domain.Group
	Members map[string]MemberState
}

// MemberState is one member's row as the member cache holds it. CapSeq is
// seq_users.max_seq (the last seq visible after quitting or being kicked, 0
// = no cap); RecvMsgOpt is the member's conversations.recv_msg_opt (0
// receive and notify, 1 no push, 2 push without notification).
type MemberState struct {
	Role       domain.RoleLevel
	Status     domain.MemberStatus
	JoinSeq    int64
	CapSeq     int64
	RecvMsgOpt int
	// MuteUntil is when the member's mute ends (Unix ms); 0 = not muted.
	MuteUntil int64
}

// Active reports whether the member is in the group (status normal).
func (m MemberState) Active() bool { return m.Status == domain.MemberNormal }

// GroupUpdate holds the group fields to change; nil fields stay.
type GroupUpdate struct {
	Name         *string
	Introduction *string
	Avatar       *string
	JoinPolicy   *string
	// InvitePermission is "members", "admins" or "" (the server's default).
	InvitePermission *string
}

// Create inserts g with its first members in one transaction; each
// member's JoinSeq must be set (>= 1). CreatedAt = UpdatedAt = g.CreatedAt,
// or now when it is 0. It returns the stored group. A taken group ID is
// domain.ErrDuplicate.
func (r *GroupRepo) Create(ctx context.Context, g domain.Group, members []domain.GroupMember) (domain.Group, error) {
	now := g.CreatedAt
	if now == 0 {
		now = nowMillis()
	}
	row := groupRow{
		ID: g.ID, Name: g.Name, Introduction: g.Introduction, Avatar: g.Avatar, Status: int(g.Status),
		CreatorUserID: g.CreatorUserID, OwnerUserID: g.OwnerUserID, GroupType: g.GroupType,
		JoinPolicy: g.JoinPolicy, InvitePermission: g.InvitePermission, CreatedAt: now, UpdatedAt: now,
	}
	err := r.db.Gorm.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		if err := tx.Create(&row).Error; err != nil {
			return mapErr(err, domain.ErrGroupNotFound)
		}
		return r.upsertMembers(tx, g.ID, members, now)
	})
	if err != nil {
		return domain.Group{}, fmt.Errorf("create group %s with %d members: %w", g.ID, len(members), err)
	}
	return row.toDomain(), nil
}

// Get returns the group with exactly this ID, or domain.ErrGroupNotFound.
func (r *GroupRepo) Get(ctx context.Context, groupID string) (domain.Group, error) {
	var row groupRow
	err := mapErr(r.db.Gorm.WithContext(ctx).Where("id = ?", groupID).Take(&row).Error, domain.ErrGroupNotFound)
	if err == nil && row.ID != groupID { // case-insensitive collation on MySQL
		err = domain.ErrGroupNotFound
	}
	if err != nil {
		return domain.Group{}, fmt.Errorf("get group %q: %w", groupID, err)
	}
	return row.toDomain(), nil
}

// ActiveCounts returns the number of active members of each of groupIDs
// (0 for a group with none or an unknown one: absent from the map).
func (r *GroupRepo) ActiveCounts(ctx context.Context, groupIDs []string) (map[string]int, error) {
	out := make(map[string]int, len(groupIDs))
	for start := 0; start < len(groupIDs); start += rowChunk {
		chunk := groupIDs[start:min(start+rowChunk, len(groupIDs))]
		var rows []struct {
			GroupID string
			N       int
		}
		err := r.db.Gorm.WithContext(ctx).Model(&groupMemberRow{}).Select("group_id, COUNT(*) AS n").
			Where("group_id IN ? AND status = ?", chunk, int(domain.MemberNormal)).Group("group_id").Scan(&rows).Error
		if err != nil {
			return nil, fmt.Errorf("count members of %d groups: %w", len(chunk), err)
		}
		for _, row := range rows {
			out[row.GroupID] = row.N
		}
	}
	return out, nil
}

// UserGroups returns the groups userID is an active member of (dismissed
// ones included: members keep read access), oldest first: up to limit
// (0: all) of those after the group (afterCreatedAt, afterID) in that
// order (keyset paging; afterID "" starts at the first).
func (r *GroupRepo) UserGroups(ctx context.Context, userID string, afterCreatedAt int64, afterID string, limit int) ([]domain.Group, error) {
	var rows []groupRow
	q := r.db.Gorm.WithContext(ctx).Table("`groups` AS g").Select("g.*").
		Joins("JOIN group_members gm ON gm.group_id = g.id").
		Where("gm.user_id = ? AND gm.status = ?", userID, int(domain.MemberNormal))
	if afterID != "" {
		q = q.Where("(g.created_at > ? OR (g.created_at = ? AND g.id > ?))", afterCreatedAt, afterCreatedAt, afterID)
	}
	if limit > 0 {
		q = q.Limit(limit)
	}
	err := q.Order("g.created_at ASC, g.id ASC").Find(&rows).Error
	if err != nil {
		return nil, fmt.Errorf("groups of %s: %w", userID, err)
	}
	out := make([]domain.Group, 0, len(rows))
	for i := range rows {
		out = append(out, rows[i].toDomain())
	}
	return out, nil
}

// SetStatus sets the group's status (dismissing it). An unknown group is
// domain.ErrGroupNotFound.
func (r *GroupRepo) SetStatus(ctx context.Context, groupID string, status domain.GroupStatus) error {
	return r.updateGroup(ctx, groupID, map[string]any{"status": int(status)})
}

// Update changes the set fields of the group and returns it as stored.
func (r *GroupRepo) Update(ctx context.Context, groupID string, u GroupUpdate) (domain.Group, error) {
	set := map[string]any{}
	for col, v := range map[string]*string{"name": u.Name, "introduction": u.Introduction, "avatar": u.Avatar, "join_policy": u.JoinPolicy,
		"invite_permission": u.InvitePermission} {
		if v != nil {
			set[col] = *v
		}
	}
	if len(set) > 0 {
		if err := r.updateGroup(ctx, groupID, set); err != nil {
			return domain.Group{}, err
		}
	}
	return r.Get(ctx, groupID)
}

func (r *GroupRepo) updateGroup(ctx context.Context, groupID string, set map[string]any) error {
	if _, err := r.Get(ctx, groupID); err != nil {
		return err
	}
	set["updated_at"] = nowMillis()
	if err := r.db.Gorm.WithContext(ctx).Model(&groupRow{}).Where("id = ?", groupID).Updates(set).Error; err != nil {
		return fmt.Errorf("update group %s: %w", groupID, err)
	}
	return nil
}

// Transfer makes to the owner (role 100, groups.owner_user_id) and from an
// ordinary member (role 20), in one transaction. Both must be active
// members; otherwise domain.ErrNotGroupMember and nothing changes.
func (r *GroupRepo) Transfer(ctx context.Context, groupID, from, to string) error {
	err := r.db.Gorm.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		for _, step := range []struct {
			user string
			role domain.RoleLevel
		}{{from, domain.RoleMember}, {to, domain.RoleOwner}} {
			res := tx.Model(&groupMemberRow{}).Where("group_id = ? AND user_id = ? AND status = ?", groupID, step.user, int(domain.MemberNormal)).
				Updates(map[string]any{"role_level": int(step.role), "updated_at": nowMillis()})
			if res.Error != nil {
				return res.Error
			}
			if res.RowsAffected != 1 {
				return fmt.Errorf("%s: %w", step.user, domain.ErrNotGroupMember)
			}
		}
		return tx.Model(&groupRow{}).Where("id = ?", groupID).
			Updates(map[string]any{"owner_user_id": to, "updated_at": nowMillis()}).Error
	})
	if err != nil {
		return fmt.Errorf("transfer %s from %s to %s: %w", groupID, from, to, err)
	}
	return nil
}

// State loads the group and every member row with its cap and
// recv_msg_opt (one query each), for the member cache.
// domain.ErrGroupNotFound for an unknown group.
func (r *GroupRepo) State(ctx context.Context, groupID string) (*GroupState, error) {
	g, err := r.Get(ctx, groupID)
	if err != nil {
		return nil, err
	}
	conv := domain.GroupConversationID(groupID)
	var rows []struct {
		UserID     string
		RoleLevel  int
		Status     int
		JoinSeq    int64
		CapSeq     int64
		RecvMsgOpt int
		MuteUntil  int64
	}
	err = r.db.Gorm.WithContext(ctx).Table("group_members AS gm").
		Select("gm.user_id, gm.role_level, gm.status, gm.join_seq, gm.mute_until, COALESCE(su.max_seq, 0) AS cap_seq, COALESCE(c.recv_msg_opt, 0) AS recv_msg_opt").
		Joins("LEFT JOIN seq_users su ON su.user_id = gm.user_id AND su.conversation_id = ?", conv).
		Joins("LEFT JOIN conversations c ON c.owner_id = gm.user_id AND c.conversation_id = ?", conv).
		Where("gm.group_id = ?", groupID).Scan(&rows).Error
	if err != nil {
		return nil, fmt.Errorf("load members of %s: %w", groupID, err)
	}
	st := &GroupState{Group: g, Members: make(map[string]MemberState, len(rows))}
	for _, row := range rows {
		st.Members[row.UserID] = MemberState{Role: domain.RoleLevel(row.RoleLevel), Status: domain.MemberStatus(row.Status),
			JoinSeq: row.JoinSeq, CapSeq: row.CapSeq, RecvMsgOpt: row.RecvMsgOpt, MuteUntil: row.MuteUntil}
	}
	return st, nil
}

func (row groupRow) toDomain() domain.Group {
	return domain.Group{
		ID: row.ID, Name: row.Name, Introduction: row.Introduction, Avatar: row.Avatar, Status: domain.GroupStatus(row.Status),
		CreatorUserID: row.CreatorUserID, OwnerUserID: row.OwnerUserID, GroupType: row.GroupType, JoinPolicy: row.JoinPolicy,
		InvitePermission: row.InvitePermission, Muted: row.Muted, CreatedAt: row.CreatedAt, UpdatedAt: row.UpdatedAt,
	}
}

func (row groupMemberRow) toDomain() domain.GroupMember {
	return domain.GroupMember{
		GroupID: row.GroupID, UserID: row.UserID, RoleLevel: domain.RoleLevel(row.RoleLevel), Status: domain.MemberStatus(row.Status),
		JoinSeq: row.JoinSeq, JoinedAt: row.JoinedAt, InviterUserID: row.InviterUserID, MuteUntil: row.MuteUntil,
	}
}
