package store

import (
	"context"
	"fmt"
	"sort"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/nexo-im/nexo/domain"
)

// The membership half of GroupRepo: member rows and what a membership
// implies in seq_users (bounds) and conversations (the member's row).

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
