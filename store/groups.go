package store

import (
	"context"
	"fmt"
	"sort"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"

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
}

// Active reports whether the member is in the group (status normal).
func (m MemberState) Active() bool { return m.Status == domain.MemberNormal }

// GroupUpdate holds the group fields to change; nil fields stay.
type GroupUpdate struct {
	Name         *string
	Introduction *string
	Avatar       *string
	JoinPolicy   *string
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
		JoinPolicy: g.JoinPolicy, CreatedAt: now, UpdatedAt: now,
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

// Member returns userID's row in the group (any status), or
// domain.ErrNotGroupMember when it never joined.
func (r *GroupRepo) Member(ctx context.Context, groupID, userID string) (domain.GroupMember, error) {
	got, err := r.MembersOf(ctx, groupID, []string{userID})
	if err != nil {
		return domain.GroupMember{}, err
	}
	m, ok := got[userID]
	if !ok {
		return domain.GroupMember{}, fmt.Errorf("member %s of %s: %w", userID, groupID, domain.ErrNotGroupMember)
	}
	return m, nil
}

// MembersOf returns the rows (any status) of those of userIDs that ever
// joined the group, keyed by user ID; the others are absent.
func (r *GroupRepo) MembersOf(ctx context.Context, groupID string, userIDs []string) (map[string]domain.GroupMember, error) {
	out := make(map[string]domain.GroupMember, len(userIDs))
	for start := 0; start < len(userIDs); start += rowChunk {
		chunk := userIDs[start:min(start+rowChunk, len(userIDs))]
		var rows []groupMemberRow
		err := r.db.Gorm.WithContext(ctx).Where("group_id = ? AND user_id IN ?", groupID, chunk).Find(&rows).Error
		if err != nil {
			return nil, fmt.Errorf("members of %s: %w", groupID, err)
		}
		for _, row := range rows {
			out[row.UserID] = row.toDomain()
		}
	}
	return out, nil
}

// ListMembers returns a page of the group's active members, owner first,
// then admins, then members, each in joining order, and how many active
// members there are in all.
func (r *GroupRepo) ListMembers(ctx context.Context, groupID string, offset, limit int) ([]domain.GroupMember, int64, error) {
	q := r.db.Gorm.WithContext(ctx).Model(&groupMemberRow{}).Where("group_id = ? AND status = ?", groupID, int(domain.MemberNormal))
	var total int64
	if err := q.Count(&total).Error; err != nil {
		return nil, 0, fmt.Errorf("count members of %s: %w", groupID, err)
	}
	var rows []groupMemberRow
	err := r.db.Gorm.WithContext(ctx).Where("group_id = ? AND status = ?", groupID, int(domain.MemberNormal)).
		Order("role_level DESC, id ASC").Offset(offset).Limit(limit).Find(&rows).Error
	if err != nil {
		return nil, 0, fmt.Errorf("list members of %s: %w", groupID, err)
	}
	out := make([]domain.GroupMember, len(rows))
	for i := range rows {
		out[i] = rows[i].toDomain()
	}
	return out, total, nil
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
// ones included: members keep read access), oldest first.
func (r *GroupRepo) UserGroups(ctx context.Context, userID string) ([]domain.Group, error) {
	var rows []groupRow
	err := r.db.Gorm.WithContext(ctx).Table("`groups` AS g").Select("g.*").
		Joins("JOIN group_members gm ON gm.group_id = g.id").
		Where("gm.user_id = ? AND gm.status = ?", userID, int(domain.MemberNormal)).
		Order("g.created_at ASC, g.id ASC").Find(&rows).Error
	if err != nil {
		return nil, fmt.Errorf("groups of %s: %w", userID, err)
	}
	out := make([]domain.Group, 0, len(rows))
	for i := range rows {
		out = append(out, rows[i].toDomain())
	}
	return out, nil
}

// AddMembers makes members active members of the group, in one transaction:
// a user who never joined gets a new row, a user who quit or was kicked gets
// its row back (an upsert: status normal, the new role, join_seq, joined_at
// and inviter). Each member's seq_users row gets min_seq = JoinSeq and
// max_seq = 0 (no cap), read and delivered cursors at least JoinSeq-1, and
// its group conversation row is created if missing. JoinSeq must be >= 1.
func (r *GroupRepo) AddMembers(ctx context.Context, groupID string, members []domain.GroupMember) error {
	err := r.db.Gorm.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		return r.upsertMembers(tx, groupID, members, nowMillis())
	})
	if err != nil {
		return fmt.Errorf("add %d members to %s: %w", len(members), groupID, err)
	}
	return nil
}

func (r *GroupRepo) upsertMembers(tx *gorm.DB, groupID string, members []domain.GroupMember, now int64) error {
	if len(members) == 0 {
		return nil
	}
	conv := domain.GroupConversationID(groupID)
	sorted := append([]domain.GroupMember(nil), members...)
	// One lock order for every writer of these rows.
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].UserID < sorted[j].UserID })
	for start := 0; start < len(sorted); start += rowChunk {
		chunk := sorted[start:min(start+rowChunk, len(sorted))]
		mrows := make([]groupMemberRow, len(chunk))
		srows := make([]seqUserRow, len(chunk))
		crows := make([]conversationRow, len(chunk))
		for i, m := range chunk {
			if m.JoinSeq < 1 {
				return fmt.Errorf("member %s: join_seq %d: %w", m.UserID, m.JoinSeq, domain.ErrInvalidArgument)
			}
			mrows[i] = groupMemberRow{
				GroupID: groupID, UserID: m.UserID, RoleLevel: int(m.RoleLevel), Status: int(domain.MemberNormal),
				JoinedAt: now, JoinSeq: m.JoinSeq, InviterUserID: m.InviterUserID, CreatedAt: now, UpdatedAt: now,
			}
			srows[i] = seqUserRow{UserID: m.UserID, ConversationID: conv, MinSeq: m.JoinSeq,
				ReadSeq: m.JoinSeq - 1, DeliveredSeq: m.JoinSeq - 1}
			crows[i] = conversationRow{ConversationID: conv, OwnerID: m.UserID, ConversationType: int(domain.SessionGroup),
				GroupID: groupID, CreatedAt: now, UpdatedAt: now}
		}
		err := tx.Clauses(clause.OnConflict{
			Columns: []clause.Column{{Name: "group_id"}, {Name: "user_id"}},
			DoUpdates: clause.AssignmentColumns([]string{
				"status", "role_level", "join_seq", "joined_at", "inviter_user_id", "updated_at"}),
		}).Create(&mrows).Error
		if err != nil {
			return fmt.Errorf("upsert members: %w", err)
		}
		set := clause.AssignmentColumns([]string{"min_seq", "max_seq"})
		set = append(set, clause.Assignments(map[string]any{
			"read_seq":      r.db.greatestUpsert("read_seq"),
			"delivered_seq": r.db.greatestUpsert("delivered_seq"),
		})...)
		err = tx.Clauses(clause.OnConflict{
			Columns: []clause.Column{{Name: "user_id"}, {Name: "conversation_id"}}, DoUpdates: set,
		}).Create(&srows).Error
		if err != nil {
			return fmt.Errorf("upsert member bounds: %w", err)
		}
		err = tx.Clauses(clause.OnConflict{
			Columns:   []clause.Column{{Name: "owner_id"}, {Name: "conversation_id"}},
			DoUpdates: clause.Assignments(map[string]any{"updated_at": r.db.greatestUpsert("updated_at")}),
		}).Create(&crows).Error
		if err != nil {
			return fmt.Errorf("upsert group conversations: %w", err)
		}
	}
	return nil
}

// Deactivate sets status (domain.MemberLeft or MemberKicked) on those of
// userIDs that are active members, and caps what they may see at a
// provisional seq: the conversation's highest saved seq, or the member's
// join_seq if that is higher — a lower bound of the final cap (the seq of
// the quit or kick notification, set by SetCap), so nothing sent after the
// change is ever visible, even if SetCap never runs. It returns the rows as
// they were before, for the members it changed.
func (r *GroupRepo) Deactivate(ctx context.Context, groupID string, userIDs []string, status domain.MemberStatus) ([]domain.GroupMember, error) {
	if status == domain.MemberNormal {
		return nil, fmt.Errorf("deactivate with status normal: %w", domain.ErrInvalidArgument)
	}
	conv := domain.GroupConversationID(groupID)
	var changed []domain.GroupMember
	err := r.db.Gorm.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		ids := append([]string(nil), userIDs...)
		sort.Strings(ids)
		var rows []groupMemberRow
		if err := tx.Where("group_id = ? AND user_id IN ? AND status = ?", groupID, ids, int(domain.MemberNormal)).
			Order("user_id").Find(&rows).Error; err != nil {
			return err
		}
		if len(rows) == 0 {
			return nil
		}
		active := make([]string, len(rows))
		for i := range rows {
			active[i] = rows[i].UserID
		}
		now := nowMillis()
		if err := tx.Model(&groupMemberRow{}).Where("group_id = ? AND user_id IN ? AND status = ?", groupID, active, int(domain.MemberNormal)).
			Updates(map[string]any{"status": int(status), "updated_at": now}).Error; err != nil {
			return err
		}
		var saved []int64
		if err := tx.Model(&seqConversationRow{}).Where("conversation_id = ?", conv).Pluck("max_seq", &saved).Error; err != nil {
			return err
		}
		var savedMax int64
		if len(saved) == 1 {
			savedMax = saved[0]
		}
		caps := make([]seqUserRow, len(rows))
		for i := range rows {
			caps[i] = seqUserRow{UserID: rows[i].UserID, ConversationID: conv, MinSeq: rows[i].JoinSeq,
				MaxSeq: max(savedMax, rows[i].JoinSeq, 1)}
			changed = append(changed, rows[i].toDomain())
		}
		return tx.Clauses(clause.OnConflict{
			Columns:   []clause.Column{{Name: "user_id"}, {Name: "conversation_id"}},
			DoUpdates: clause.AssignmentColumns([]string{"max_seq"}),
		}).Create(&caps).Error
	})
	if err != nil {
		return nil, fmt.Errorf("deactivate %d members of %s: %w", len(userIDs), groupID, err)
	}
	return changed, nil
}

// SetCap sets the visibility cap (seq_users.max_seq) of those of userIDs
// that are still inactive in the group: the seq of their quit or kick
// notification. A user who re-joined meanwhile keeps no cap.
func (r *GroupRepo) SetCap(ctx context.Context, groupID string, userIDs []string, capSeq int64) error {
	if capSeq < 1 {
		return fmt.Errorf("cap %d: %w", capSeq, domain.ErrInvalidArgument)
	}
	inactive := r.db.Gorm.Model(&groupMemberRow{}).Select("user_id").
		Where("group_id = ? AND status <> ?", groupID, int(domain.MemberNormal))
	err := r.db.Gorm.WithContext(ctx).Model(&seqUserRow{}).
		Where("conversation_id = ? AND user_id IN ? AND user_id IN (?)", domain.GroupConversationID(groupID), userIDs, inactive).
		Update("max_seq", capSeq).Error
	if err != nil {
		return fmt.Errorf("cap %d members of %s at %d: %w", len(userIDs), groupID, capSeq, err)
	}
	return nil
}

// Reactivate undoes Deactivate for members whose change could not be
// announced: each gets its previous status (normal) and role back and its
// cap removed, if it is still inactive.
func (r *GroupRepo) Reactivate(ctx context.Context, groupID string, previous []domain.GroupMember) error {
	conv := domain.GroupConversationID(groupID)
	err := r.db.Gorm.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		for _, m := range previous {
			res := tx.Model(&groupMemberRow{}).Where("group_id = ? AND user_id = ? AND status <> ?", groupID, m.UserID, int(domain.MemberNormal)).
				Updates(map[string]any{"status": int(domain.MemberNormal), "role_level": int(m.RoleLevel), "updated_at": nowMillis()})
			if res.Error != nil {
				return res.Error
			}
			if res.RowsAffected == 0 {
				continue
			}
			if err := tx.Model(&seqUserRow{}).Where("user_id = ? AND conversation_id = ?", m.UserID, conv).
				Update("max_seq", 0).Error; err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("reactivate %d members of %s: %w", len(previous), groupID, err)
	}
	return nil
}

// SetStatus sets the group's status (dismissing it). An unknown group is
// domain.ErrGroupNotFound.
func (r *GroupRepo) SetStatus(ctx context.Context, groupID string, status domain.GroupStatus) error {
	return r.updateGroup(ctx, groupID, map[string]any{"status": int(status)})
}

// Update changes the set fields of the group and returns it as stored.
func (r *GroupRepo) Update(ctx context.Context, groupID string, u GroupUpdate) (domain.Group, error) {
	set := map[string]any{}
	for col, v := range map[string]*string{"name": u.Name, "introduction": u.Introduction, "avatar": u.Avatar, "join_policy": u.JoinPolicy} {
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

// SetRole sets an active member's role. domain.ErrNotGroupMember when
// userID is not an active member.
func (r *GroupRepo) SetRole(ctx context.Context, groupID, userID string, role domain.RoleLevel) error {
	// Read first: RowsAffected is 0 for an unchanged row on MySQL.
	m, err := r.Member(ctx, groupID, userID)
	if err == nil && m.Status != domain.MemberNormal {
		err = domain.ErrMemberNotActive
	}
	if err != nil {
		return err
	}
	err = r.db.Gorm.WithContext(ctx).Model(&groupMemberRow{}).Where("group_id = ? AND user_id = ?", groupID, userID).
		Updates(map[string]any{"role_level": int(role), "updated_at": nowMillis()}).Error
	if err != nil {
		return fmt.Errorf("set role of %s in %s: %w", userID, groupID, err)
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
	}
	err = r.db.Gorm.WithContext(ctx).Table("group_members AS gm").
		Select("gm.user_id, gm.role_level, gm.status, gm.join_seq, COALESCE(su.max_seq, 0) AS cap_seq, COALESCE(c.recv_msg_opt, 0) AS recv_msg_opt").
		Joins("LEFT JOIN seq_users su ON su.user_id = gm.user_id AND su.conversation_id = ?", conv).
		Joins("LEFT JOIN conversations c ON c.owner_id = gm.user_id AND c.conversation_id = ?", conv).
		Where("gm.group_id = ?", groupID).Scan(&rows).Error
	if err != nil {
		return nil, fmt.Errorf("load members of %s: %w", groupID, err)
	}
	st := &GroupState{Group: g, Members: make(map[string]MemberState, len(rows))}
	for _, row := range rows {
		st.Members[row.UserID] = MemberState{Role: domain.RoleLevel(row.RoleLevel), Status: domain.MemberStatus(row.Status),
			JoinSeq: row.JoinSeq, CapSeq: row.CapSeq, RecvMsgOpt: row.RecvMsgOpt}
	}
	return st, nil
}

func (row groupRow) toDomain() domain.Group {
	return domain.Group{
		ID: row.ID, Name: row.Name, Introduction: row.Introduction, Avatar: row.Avatar, Status: domain.GroupStatus(row.Status),
		CreatorUserID: row.CreatorUserID, OwnerUserID: row.OwnerUserID, GroupType: row.GroupType, JoinPolicy: row.JoinPolicy,
		CreatedAt: row.CreatedAt, UpdatedAt: row.UpdatedAt,
	}
}

func (row groupMemberRow) toDomain() domain.GroupMember {
	return domain.GroupMember{
		GroupID: row.GroupID, UserID: row.UserID, RoleLevel: domain.RoleLevel(row.RoleLevel), Status: domain.MemberStatus(row.Status),
		JoinSeq: row.JoinSeq, JoinedAt: row.JoinedAt, InviterUserID: row.InviterUserID,
	}
}
