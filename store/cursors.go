package store

import (
	"context"
	"fmt"

	"github.com/nexo-im/nexo/domain"
)

// CursorRepo owns seq_users: each member's visibility bounds and its
// delivered/read cursors, the single source of truth for receipts (seed
// design 001 §2).
type CursorRepo struct{ db *DB }

// NewCursorRepo returns a CursorRepo over db.
func NewCursorRepo(db *DB) *CursorRepo { return &CursorRepo{db: db} }

// Get returns userID's cursor in conversationID; a member with no row yet
// gets the zero cursor (no bounds, nothing read).
func (r *CursorRepo) Get(ctx context.Context, userID, conversationID string) (domain.Cursor, error) {
	var rows []seqUserRow
	err := r.db.Gorm.WithContext(ctx).Where("user_id = ? AND conversation_id = ?", userID, conversationID).
		Limit(1).Find(&rows).Error
	if err != nil {
		return domain.Cursor{}, fmt.Errorf("cursor of %s in %s: %w", userID, conversationID, err)
	}
	c := domain.Cursor{UserID: userID, ConversationID: conversationID}
	if len(rows) == 1 {
		c.MinSeq, c.MaxSeq, c.ReadSeq, c.DeliveredSeq = rows[0].MinSeq, rows[0].MaxSeq, rows[0].ReadSeq, rows[0].DeliveredSeq
	}
	return c, nil
}
