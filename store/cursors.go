package store

import (
	"context"
	"fmt"
	"sort"

	"gorm.io/gorm/clause"

	"github.com/nexo-im/nexo/domain"
)

// CursorRepo owns seq_users: each member's visibility bounds and its
// delivered/read cursors, the single source of truth for receipts
// (docs/sync.md, "Cursors are the source of truth").
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

// CursorKey names one member's cursor in one conversation.
type CursorKey struct {
	UserID         string
	ConversationID string
}

// Load returns the stored cursors of keys (one query per 500 keys); a key
// with no row is absent from the map (its cursor is zero).
func (r *CursorRepo) Load(ctx context.Context, keys []CursorKey) (map[CursorKey]domain.Cursor, error) {
	out := make(map[CursorKey]domain.Cursor, len(keys))
	for start := 0; start < len(keys); start += rowChunk {
		chunk := keys[start:min(start+rowChunk, len(keys))]
		pairs := make([][]any, len(chunk))
		for i, k := range chunk {
			pairs[i] = []any{k.UserID, k.ConversationID}
		}
		var rows []seqUserRow
		if err := r.db.Gorm.WithContext(ctx).Where("(user_id, conversation_id) IN ?", pairs).Find(&rows).Error; err != nil {
			return nil, fmt.Errorf("load %d cursors: %w", len(chunk), err)
		}
		for _, row := range rows {
			out[CursorKey{row.UserID, row.ConversationID}] = domain.Cursor{
				UserID: row.UserID, ConversationID: row.ConversationID, MinSeq: row.MinSeq, MaxSeq: row.MaxSeq,
				ReadSeq: row.ReadSeq, DeliveredSeq: row.DeliveredSeq,
			}
		}
	}
	return out, nil
}

// Advance moves each cursor's delivered_seq and read_seq forward to the
// given values with GREATEST semantics — a lower value (a repeated or
// reordered ACK) changes nothing — creating missing rows (no visibility
// bounds). MinSeq and MaxSeq of the input are ignored: the visibility
// bounds belong to the group repository. One multi-row upsert per 500
// cursors, rows sorted by key so concurrent writers lock in one order; it
// returns how many statements it ran.
func (r *CursorRepo) Advance(ctx context.Context, cursors []domain.Cursor) (int, error) {
	rows := make([]seqUserRow, 0, len(cursors))
	for _, c := range cursors {
		rows = append(rows, seqUserRow{UserID: c.UserID, ConversationID: c.ConversationID,
			ReadSeq: c.ReadSeq, DeliveredSeq: c.DeliveredSeq})
	}
	sort.Slice(rows, func(i, j int) bool {
		return rows[i].UserID < rows[j].UserID || rows[i].UserID == rows[j].UserID && rows[i].ConversationID < rows[j].ConversationID
	})
	statements := 0
	for start := 0; start < len(rows); start += rowChunk {
		chunk := rows[start:min(start+rowChunk, len(rows))]
		err := r.db.Gorm.WithContext(ctx).Clauses(clause.OnConflict{
			Columns: []clause.Column{{Name: "user_id"}, {Name: "conversation_id"}},
			DoUpdates: clause.Assignments(map[string]any{
				"read_seq":      r.db.greatestUpsert("read_seq"),
				"delivered_seq": r.db.greatestUpsert("delivered_seq"),
			}),
		}).Create(&chunk).Error
		if err != nil {
			return statements, fmt.Errorf("advance %d cursors: %w", len(chunk), err)
		}
		statements++
	}
	return statements, nil
}
