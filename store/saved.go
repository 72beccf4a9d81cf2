package store

import (
	"context"
	"fmt"
)

// SeqKey names one message: its conversation and seq.
type SeqKey struct {
	ConversationID string
	Seq            int64
}

// SavedRef is what Saved returns of one message: its server_msg_id and
// when it was saved (messages.created_at, Unix ms: the commit of its save,
// not its send_at).
type SavedRef struct {
	ServerMsgID string
	SavedAt     int64
}

// Saved returns the saved messages among keys (failed placeholders left
// out; a seq not saved yet is absent). One indexed query (uk_conv_seq) per
// 200 keys, reading three columns: the cursor writer asks it once per
// flush for the seqs the flush moved cursors to (the saved → delivered
// and delivered → read histograms, the cursor audit lines).
func (r *ConversationRepo) Saved(ctx context.Context, keys []SeqKey) (map[SeqKey]SavedRef, error) {
	out := make(map[SeqKey]SavedRef, len(keys))
	ranges := make([]SeqRange, 0, len(keys))
	for _, k := range keys {
		ranges = append(ranges, SeqRange{ConversationID: k.ConversationID, After: k.Seq - 1, Upto: k.Seq})
	}
	err := chunks(ranges, func(rs []SeqRange) error {
		where, args := rangeWhere("m", rs)
		var rows []struct {
			ConversationID string
			Seq            int64
			ServerMsgID    string
			CreatedAt      int64
		}
		err := r.db.Gorm.WithContext(ctx).Table("messages AS m").
			Select("m.conversation_id, m.seq, m.server_msg_id, m.created_at").
			Where(where, args...).Where("m.status <> ?", msgStatusFailed).Find(&rows).Error
		for _, row := range rows {
			out[SeqKey{row.ConversationID, row.Seq}] = SavedRef{ServerMsgID: row.ServerMsgID, SavedAt: row.CreatedAt}
		}
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("saved times of %d messages: %w", len(keys), err)
	}
	return out, nil
}
