package store

import (
	"context"
	"fmt"

	"github.com/nexo-im/nexo/domain"
)

// The writes of group moderation (docs/moderation.md): a group-wide mute,
// a member's timed mute, and bans (member status domain.MemberBanned).

// SetMuted sets whether only the owner and admins may send to the group.
// An unknown group is domain.ErrGroupNotFound.
func (r *GroupRepo) SetMuted(ctx context.Context, groupID string, muted bool) error {
	return r.updateGroup(ctx, groupID, map[string]any{"muted": muted})
}

// SetMuteUntil sets when userID's mute in the group ends (Unix ms; 0 lifts
// it), whatever the member's status, so a mute outlives quitting and
// coming back. domain.ErrNotGroupMember when userID has no member row.
func (r *GroupRepo) SetMuteUntil(ctx context.Context, groupID, userID string, until int64) error {
	if _, err := r.Member(ctx, groupID, userID); err != nil {
		return err
	}
	err := r.db.Gorm.WithContext(ctx).Model(&groupMemberRow{}).Where("group_id = ? AND user_id = ?", groupID, userID).
		Updates(map[string]any{"mute_until": until, "updated_at": nowMillis()}).Error
	if err != nil {
		return fmt.Errorf("set mute of %s in %s: %w", userID, groupID, err)
	}
	return nil
}

// SetStatusFrom sets userID's member status to status if it is one of
// from, and reports whether it changed (a former member banned, or a
// banned one unbanned). Activating or deactivating a member goes through
// AddMembers and Deactivate, which move caps and bounds too.
func (r *GroupRepo) SetStatusFrom(ctx context.Context, groupID, userID string, from []domain.MemberStatus, status domain.MemberStatus) (bool, error) {
	codes := make([]int, len(from))
	for i, s := range from {
		codes[i] = int(s)
	}
	res := r.db.Gorm.WithContext(ctx).Model(&groupMemberRow{}).
		Where("group_id = ? AND user_id = ? AND status IN ?", groupID, userID, codes).
		Updates(map[string]any{"status": int(status), "updated_at": nowMillis()})
	if res.Error != nil {
		return false, fmt.Errorf("set status of %s in %s: %w", userID, groupID, res.Error)
	}
	return res.RowsAffected > 0, nil
}
