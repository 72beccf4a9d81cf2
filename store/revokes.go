package store

import (
	"context"
	"fmt"

	"gorm.io/gorm/clause"

	"github.com/nexo-im/nexo/domain"
)

// RevokeRepo recalls messages: a saved message is marked revoked at once; a
// recall of a seq whose message is accepted but not saved yet is recorded
// as an intent that SaveBatch applies, in its own transaction, when the
// message arrives — so the message is stored revoked and its content is
// never served by a pull. docs/sync.md describes the rules.
type RevokeRepo struct{ db *DB }

// NewRevokeRepo returns a RevokeRepo over db.
func NewRevokeRepo(db *DB) *RevokeRepo { return &RevokeRepo{db: db} }

// RevokeIntent is a recall waiting for its message. It applies to the
// message saved at (ConversationID, Seq) when AnySender is set (a group
// owner or admin recalled it) or when RevokerID sent it at or after
// MinSendAt (the sender, within msg.revoke_window of the request), and the
// message is an ordinary one (not a notification).
type RevokeIntent struct {
	ConversationID string
	Seq            int64
	RevokerID      string
	AnySender      bool
	MinSendAt      int64
}

// Applies reports whether the intent revokes m. SaveBatch applies the same
// rule in SQL (revokeIntentsSQL); TestRevokeIntentAppliedBySaveBatch keeps the
// two equal.
func (in RevokeIntent) Applies(m *domain.Message) bool {
	if m.ConversationID != in.ConversationID || m.Seq != in.Seq || m.Status != domain.StatusNormal ||
		m.MsgType >= domain.MsgNotificationMin {
		return false
	}
	return in.AnySender || m.SenderID == in.RevokerID && m.SendAt >= in.MinSendAt
}

// Record stores an intent; recording the same (conversation, seq, revoker)
// again replaces it.
func (r *RevokeRepo) Record(ctx context.Context, in RevokeIntent) error {
	row := revokeIntentRow{ConversationID: in.ConversationID, Seq: in.Seq, RevokerID: in.RevokerID,
		AnySender: in.AnySender, MinSendAt: in.MinSendAt, CreatedAt: nowMillis()}
	err := r.db.Gorm.WithContext(ctx).Clauses(clause.OnConflict{
		Columns:   []clause.Column{{Name: "conversation_id"}, {Name: "seq"}, {Name: "revoker_id"}},
		DoUpdates: clause.AssignmentColumns([]string{"any_sender", "min_send_at", "created_at"}),
	}).Create(&row).Error
	if err != nil {
		return fmt.Errorf("record revoke of %s seq %d: %w", in.ConversationID, in.Seq, err)
	}
	return nil
}

// Message returns the stored message at (conversationID, seq), whatever
// its status, or domain.ErrMessageNotFound.
func (r *RevokeRepo) Message(ctx context.Context, conversationID string, seq int64) (domain.Message, error) {
	var rows []messageRow
	err := r.db.Gorm.WithContext(ctx).Where("conversation_id = ? AND seq = ?", conversationID, seq).Limit(1).Find(&rows).Error
	if err != nil {
		return domain.Message{}, fmt.Errorf("message %s seq %d: %w", conversationID, seq, err)
	}
	if len(rows) == 0 {
		return domain.Message{}, fmt.Errorf("%s seq %d: %w", conversationID, seq, domain.ErrMessageNotFound)
	}
	return fromMessageRow(&rows[0]), nil
}

// Revoke marks the stored message at (conversationID, seq) revoked if it is
// normal, and reports whether this call changed it. The content stays in
// the row (docs/sync.md, "Recall") but is never served again.
func (r *RevokeRepo) Revoke(ctx context.Context, conversationID string, seq int64) (bool, error) {
	res := r.db.Gorm.WithContext(ctx).Model(&messageRow{}).
		Where("conversation_id = ? AND seq = ? AND status = ?", conversationID, seq, msgStatusNormal).
		Updates(map[string]any{"status": msgStatusRevoked, "updated_at": nowMillis()})
	if res.Error != nil {
		return false, fmt.Errorf("revoke %s seq %d: %w", conversationID, seq, res.Error)
	}
	return res.RowsAffected == 1, nil
}
