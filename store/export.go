package store

import (
	"context"
	"fmt"
	"sort"

	"github.com/nexo-im/nexo/domain"
)

// ExportConversation is one conversation of a user's export and the seqs
// of it the user may read: MinSeq..MaxSeq (MaxSeq 0 = no cap), the bounds
// of their cursor row (a group member's join and leave seqs).
type ExportConversation struct {
	ConversationID string
	MinSeq         int64
	MaxSeq         int64
	ClearedSeq     int64
	ReadSeq        int64
}

// ExportConversations returns every conversation userID has a cursor or a
// conversation row in, sorted by conversation_id.
func (r *PrivacyRepo) ExportConversations(ctx context.Context, userID string) ([]ExportConversation, error) {
	g := r.db.Gorm.WithContext(ctx)
	var cursors []seqUserRow
	if err := g.Where("user_id = ?", userID).Find(&cursors).Error; err != nil {
		return nil, fmt.Errorf("export cursors of %s: %w", userID, err)
	}
	var convs []conversationRow
	if err := g.Select("conversation_id", "cleared_seq").Where("owner_id = ?", userID).Find(&convs).Error; err != nil {
		return nil, fmt.Errorf("export conversations of %s: %w", userID, err)
	}
	by := map[string]*ExportConversation{}
	for _, c := range cursors {
		by[c.ConversationID] = &ExportConversation{ConversationID: c.ConversationID, MinSeq: c.MinSeq, MaxSeq: c.MaxSeq, ReadSeq: c.ReadSeq}
	}
	for _, c := range convs {
		e, ok := by[c.ConversationID]
		if !ok {
			e = &ExportConversation{ConversationID: c.ConversationID}
			by[c.ConversationID] = e
		}
		e.ClearedSeq = c.ClearedSeq
	}
	out := make([]ExportConversation, 0, len(by))
	for _, e := range by {
		if t, _ := domain.ConversationSessionType(e.ConversationID); t == domain.SessionSingle {
			// A single chat's cursor bounds nothing: both parties see it all.
			e.MinSeq, e.MaxSeq = 0, 0
		}
		out = append(out, *e)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ConversationID < out[j].ConversationID })
	return out, nil
}

// ExportPage returns up to limit stored messages of conversationID with
// seq > after and seq <= upto (upto 0: no bound), ascending: a keyset page,
// so a long history is read in constant memory.
func (r *PrivacyRepo) ExportPage(ctx context.Context, conversationID string, after, upto int64, limit int) ([]domain.Message, error) {
	q := r.db.Gorm.WithContext(ctx).Where("conversation_id = ? AND seq > ?", conversationID, after)
	if upto > 0 {
		q = q.Where("seq <= ?", upto)
	}
	var rows []messageRow
	if err := q.Order("seq ASC").Limit(limit).Find(&rows).Error; err != nil {
		return nil, fmt.Errorf("export %s after %d: %w", conversationID, after, err)
	}
	return fromMessageRows(rows), nil
}
