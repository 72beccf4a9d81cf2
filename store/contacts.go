package store

import (
	"context"
	"fmt"

	"github.com/nexo-im/nexo/domain"
)

// Contacts answers "which of ids shares a conversation with userID": a
// single chat with at least one saved message, or a group in which both
// are active members (Shared; SharedGroups for groups only). The result
// holds true for each such id.
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
	inGroups, err := c.SharedGroups(ctx, userID, ids)
	if err != nil {
		return nil, err
	}
	for m := range inGroups {
		out[m] = true
	}
	return out, nil
}

// SharedGroups reports which of ids are active members of a group in
// which userID is an active member too (single chats do not count).
func (c *Contacts) SharedGroups(ctx context.Context, userID string, ids []string) (map[string]bool, error) {
	out := map[string]bool{}
	if len(ids) == 0 {
		return out, nil
	}
	var members []string
	err := c.db.Gorm.WithContext(ctx).Table("group_members AS a").
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
