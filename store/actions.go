package store

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/nexo-im/nexo/domain"
)

// ActionRepo stores what members do to messages after they are sent
// (docs/actions.md): edits and their history, deletes for everyone
// (tombstones), per-user hidden messages (delete for self), reactions, and
// the read cursors a "read by" list is made of. Every change that must keep
// a total order per message (edits, reactions) runs in a transaction that
// first locks the message's row.
type ActionRepo struct{ db *DB }

// NewActionRepo returns an ActionRepo over db.
func NewActionRepo(db *DB) *ActionRepo { return &ActionRepo{db: db} }

// messageEditRow (migration 12) is an earlier version of an edited
// message: the content it had before edit EditVersion+1.
type messageEditRow struct {
	ConversationID string  `gorm:"column:conversation_id;type:varchar(256);primaryKey"`
	Seq            int64   `gorm:"column:seq;primaryKey;autoIncrement:false"`
	EditVersion    int     `gorm:"column:edit_version;primaryKey;autoIncrement:false"`
	ContentText    *string `gorm:"column:content_text;type:text"`
	// EditedAt is when this version was written (send_at for version 0).
	EditedAt int64 `gorm:"column:edited_at;not null"`
	// ReplacedBy is the user whose edit replaced this version.
	ReplacedBy string `gorm:"column:replaced_by;type:varchar(64);not null"`
}

func (messageEditRow) TableName() string { return "message_edits" }

// messageHiddenRow (migration 12) is a message one user deleted for
// themself.
type messageHiddenRow struct {
	UserID         string `gorm:"column:user_id;type:varchar(64);primaryKey"`
	ConversationID string `gorm:"column:conversation_id;type:varchar(256);primaryKey"`
	Seq            int64  `gorm:"column:seq;primaryKey;autoIncrement:false"`
	CreatedAt      int64  `gorm:"column:created_at;not null;autoCreateTime:false"`
}

func (messageHiddenRow) TableName() string { return "message_hidden" }

// messageReactionRow (migration 12) is one user's reaction with one emoji
// on one message.
type messageReactionRow struct {
	ConversationID string `gorm:"column:conversation_id;type:varchar(256);primaryKey"`
	Seq            int64  `gorm:"column:seq;primaryKey;autoIncrement:false"`
	UserID         string `gorm:"column:user_id;type:varchar(64);primaryKey"`
	Emoji          string `gorm:"column:emoji;type:varchar(64);primaryKey"`
	CreatedAt      int64  `gorm:"column:created_at;not null;autoCreateTime:false"`
}

func (messageReactionRow) TableName() string { return "message_reactions" }

// migrateActions is migration 12 (docs/actions.md): messages.edited_at and
// edit_version, the edit history, hidden messages and reactions, and an
// index on seq_users (conversation_id, read_seq) for "read by" lists and
// read counts. Each step checks before it adds.
func migrateActions(tx *gorm.DB, _ Dialect) error {
	m := tx.Migrator()
	for _, f := range []string{"EditedAt", "EditVersion"} {
		if !m.HasColumn(&messageRow{}, f) {
			if err := m.AddColumn(&messageRow{}, f); err != nil {
				return fmt.Errorf("add messages.%s: %w", f, err)
			}
		}
	}
	for _, t := range []any{&messageEditRow{}, &messageHiddenRow{}, &messageReactionRow{}} {
		if m.HasTable(t) {
			continue
		}
		if err := m.CreateTable(t); err != nil {
			return fmt.Errorf("create table: %w", err)
		}
	}
	if !m.HasIndex(&seqUserRow{}, "idx_conv_read") {
		if err := tx.Exec("CREATE INDEX idx_conv_read ON seq_users (conversation_id, read_seq)").Error; err != nil {
			return fmt.Errorf("create idx_conv_read: %w", err)
		}
	}
	return nil
}

// extraJSON is messages.extra.
type extraJSON struct {
	Quote *quoteJSON `json:"quote,omitempty"`
}

type quoteJSON struct {
	Seq      int64  `json:"seq"`
	SenderID string `json:"sender_id"`
	MsgType  int    `json:"msg_type"`
	Preview  string `json:"preview"`
}

func encodeExtra(m *domain.Message) *string {
	if m.Quote == nil {
		return nil
	}
	q := m.Quote
	b, _ := json.Marshal(extraJSON{Quote: &quoteJSON{Seq: q.Seq, SenderID: q.SenderID, MsgType: int(q.MsgType), Preview: q.Preview}})
	s := string(b)
	return &s
}

func decodeQuote(extra *string) *domain.Quote {
	if extra == nil {
		return nil
	}
	var x extraJSON
	if json.Unmarshal([]byte(*extra), &x) != nil || x.Quote == nil {
		return nil
	}
	return &domain.Quote{Seq: x.Quote.Seq, SenderID: x.Quote.SenderID, MsgType: domain.MsgType(x.Quote.MsgType), Preview: x.Quote.Preview}
}

// lockMessage reads the message at (conv, seq) in tx, locking its row on
// MySQL (SQLite serializes writers anyway): domain.ErrMessageNotFound when
// there is none.
func (r *ActionRepo) lockMessage(tx *gorm.DB, conv string, seq int64) (messageRow, error) {
	q := tx.Where("conversation_id = ? AND seq = ?", conv, seq).Limit(1)
	if r.db.Dialect == MySQL {
		q = q.Clauses(clause.Locking{Strength: "UPDATE"})
	}
	var rows []messageRow
	if err := q.Find(&rows).Error; err != nil {
		return messageRow{}, fmt.Errorf("lock %s seq %d: %w", conv, seq, err)
	}
	if len(rows) == 0 {
		return messageRow{}, fmt.Errorf("%s seq %d: %w", conv, seq, domain.ErrMessageNotFound)
	}
	return rows[0], nil
}

// Edit replaces the text of the message at (conv, seq) with text, keeping
// the version it replaces in the history, and returns the message as it
// now stands (EditVersion one higher, EditedAt at). check decides, on the
// locked row, whether the edit is allowed; its error is returned as is.
// Concurrent edits of one message queue on the row lock, so versions are
// strictly rising and the last to commit is the content every reader sees.
func (r *ActionRepo) Edit(ctx context.Context, conv string, seq int64, editorID, text string, at int64, check func(*domain.Message) error) (domain.Message, error) {
	var out domain.Message
	err := r.db.Gorm.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		row, err := r.lockMessage(tx, conv, seq)
		if err != nil {
			return err
		}
		m := fromMessageRow(&row)
		if err := check(&m); err != nil {
			return err
		}
		prevAt := row.EditedAt
		if prevAt == 0 {
			prevAt = row.SendAt
		}
		hist := messageEditRow{ConversationID: conv, Seq: seq, EditVersion: row.EditVersion, ContentText: row.ContentText,
			EditedAt: prevAt, ReplacedBy: editorID}
		if err := tx.Create(&hist).Error; err != nil {
			return fmt.Errorf("keep version %d of %s seq %d: %w", row.EditVersion, conv, seq, err)
		}
		next := row.EditVersion + 1
		res := tx.Model(&messageRow{}).Where("id = ?", row.ID).Updates(map[string]any{
			"content_text": text, "edited_at": at, "edit_version": next, "updated_at": nowMillis()})
		if res.Error != nil {
			return fmt.Errorf("edit %s seq %d: %w", conv, seq, res.Error)
		}
		m.Content.Text, m.EditedAt, m.EditVersion = text, at, next
		out = m
		return nil
	})
	if err != nil {
		return out, err
	}
	// Search matches the text as it now reads (docs/search.md); without
	// the search table (search.enabled false) there is nothing to follow.
	if err := r.reindexEdit(ctx, conv, seq, text); err != nil {
		return out, fmt.Errorf("reindex the edit of %s seq %d: %w", conv, seq, err)
	}
	return out, nil
}

// reindexEdit replaces the indexed text of an edited message. SQLite's
// FTS5 index follows message_search by triggers on insert and delete only,
// so there the row is updated in the index by hand, as the delete trigger
// does.
func (r *ActionRepo) reindexEdit(ctx context.Context, conv string, seq int64, text string) error {
	g := r.db.Gorm.WithContext(ctx)
	if !g.Migrator().HasTable("message_search") {
		return nil
	}
	if r.db.Dialect != SQLite {
		return g.Exec("UPDATE message_search SET body = ? WHERE conversation_id = ? AND seq = ? AND field = ?", text, conv, seq, "text").Error
	}
	var rows []struct {
		ID   int64
		Body string
	}
	if err := g.Raw("SELECT id, body FROM message_search WHERE conversation_id = ? AND seq = ? AND field = ?", conv, seq, "text").
		Scan(&rows).Error; err != nil || len(rows) == 0 {
		return err
	}
	return g.Transaction(func(tx *gorm.DB) error {
		if err := tx.Exec("UPDATE message_search SET body = ? WHERE id = ?", text, rows[0].ID).Error; err != nil {
			return err
		}
		if err := tx.Exec("INSERT INTO message_search_fts (message_search_fts, rowid, body) VALUES ('delete', ?, ?)", rows[0].ID, rows[0].Body).Error; err != nil {
			return err
		}
		return tx.Exec("INSERT INTO message_search_fts (rowid, body) VALUES (?, ?)", rows[0].ID, text).Error
	})
}

// EditVersion is one earlier version of an edited message.
type EditVersion struct {
	Version  int
	Text     string
	EditedAt int64 // when this version was written (send_at for version 0)
}

// Edits returns the earlier versions of the message at (conv, seq), oldest
// first; none for a message never edited.
func (r *ActionRepo) Edits(ctx context.Context, conv string, seq int64) ([]EditVersion, error) {
	var rows []messageEditRow
	err := r.db.Gorm.WithContext(ctx).Where("conversation_id = ? AND seq = ?", conv, seq).Order("edit_version").Find(&rows).Error
	if err != nil {
		return nil, fmt.Errorf("edits of %s seq %d: %w", conv, seq, err)
	}
	out := make([]EditVersion, len(rows))
	for i, row := range rows {
		out[i] = EditVersion{Version: row.EditVersion, EditedAt: row.EditedAt}
		if row.ContentText != nil {
			out[i].Text = *row.ContentText
		}
	}
	return out, nil
}

// DeleteForAll turns the messages at seqs of conv into tombstones (status
// deleted, content and quote cleared, edit history dropped), all or none:
// check decides on each locked row (ascending seq) and its first error
// aborts the whole delete. A seq with no row is domain.ErrMessageNotFound.
// It returns the messages as they were before (already deleted ones
// included: deleting twice is not an error).
func (r *ActionRepo) DeleteForAll(ctx context.Context, conv string, seqs []int64, check func(*domain.Message) error) ([]domain.Message, error) {
	sorted := append([]int64(nil), seqs...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i] < sorted[j] })
	var out []domain.Message
	err := r.db.Gorm.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		for _, seq := range sorted {
			row, err := r.lockMessage(tx, conv, seq)
			if err != nil {
				return err
			}
			m := fromMessageRow(&row)
			if err := check(&m); err != nil {
				return err
			}
			out = append(out, m)
		}
		res := tx.Model(&messageRow{}).Where("conversation_id = ? AND seq IN ? AND status <> ?", conv, sorted, msgStatusDeleted).
			Updates(map[string]any{"status": msgStatusDeleted, "content_text": nil, "content_image": "", "content_video": "",
				"content_audio": "", "content_file": "", "content_custom": nil, "extra": nil, "updated_at": nowMillis()})
		if res.Error != nil {
			return fmt.Errorf("delete %d messages of %s: %w", len(sorted), conv, res.Error)
		}
		if err := tx.Where("conversation_id = ? AND seq IN ?", conv, sorted).Delete(&messageEditRow{}).Error; err != nil {
			return fmt.Errorf("drop edit history: %w", err)
		}
		return tx.Where("conversation_id = ? AND seq IN ?", conv, sorted).Delete(&messageReactionRow{}).Error
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// Hide records that userID deleted the messages at seqs of conv for
// themself; hiding a seq again changes nothing.
func (r *ActionRepo) Hide(ctx context.Context, userID, conv string, seqs []int64) error {
	rows := make([]messageHiddenRow, len(seqs))
	now := nowMillis()
	for i, s := range seqs {
		rows[i] = messageHiddenRow{UserID: userID, ConversationID: conv, Seq: s, CreatedAt: now}
	}
	err := r.db.Gorm.WithContext(ctx).Clauses(clause.OnConflict{DoNothing: true}).Create(&rows).Error
	if err != nil {
		return fmt.Errorf("hide %d messages of %s for %s: %w", len(seqs), conv, userID, err)
	}
	return nil
}

// Hidden returns which of seqs of conv userID deleted for themself.
func (r *ActionRepo) Hidden(ctx context.Context, userID, conv string, seqs []int64) (map[int64]bool, error) {
	out := map[int64]bool{}
	if len(seqs) == 0 {
		return out, nil
	}
	var got []int64
	err := r.db.Gorm.WithContext(ctx).Model(&messageHiddenRow{}).
		Where("user_id = ? AND conversation_id = ? AND seq IN ?", userID, conv, seqs).Pluck("seq", &got).Error
	if err != nil {
		return nil, fmt.Errorf("hidden messages of %s in %s: %w", userID, conv, err)
	}
	for _, s := range got {
		out[s] = true
	}
	return out, nil
}

// ReactionOutcome is what React did.
type ReactionOutcome struct {
	Changed bool // false: the reaction was already there (add) or absent (remove)
	Count   int  // how many users now react with the emoji on the message
}

// React adds or removes userID's reaction emoji on the message at (conv,
// seq). An add refuses, with domain.ErrTooManyReactions, a user who
// already has maxPerUser reactions on it (0: no cap). check decides on the
// locked row whether the message may be reacted to. Reactions on one
// message queue on its row lock, so every count is exact.
func (r *ActionRepo) React(ctx context.Context, conv string, seq int64, userID, emoji string, add bool, maxPerUser int,
	check func(*domain.Message) error) (ReactionOutcome, error) {
	var out ReactionOutcome
	err := r.db.Gorm.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		row, err := r.lockMessage(tx, conv, seq)
		if err != nil {
			return err
		}
		m := fromMessageRow(&row)
		if err := check(&m); err != nil {
			return err
		}
		mine := tx.Model(&messageReactionRow{}).Where("conversation_id = ? AND seq = ? AND user_id = ?", conv, seq, userID)
		var have []string
		if err := mine.Pluck("emoji", &have).Error; err != nil {
			return fmt.Errorf("reactions of %s: %w", userID, err)
		}
		exists := false
		for _, e := range have {
			exists = exists || e == emoji
		}
		switch {
		case add && !exists:
			if maxPerUser > 0 && len(have) >= maxPerUser {
				return domain.NewError(domain.ErrTooManyReactions,
					fmt.Sprintf("you already have %d reactions on this message; the limit is %d", len(have), maxPerUser))
			}
			err = tx.Create(&messageReactionRow{ConversationID: conv, Seq: seq, UserID: userID, Emoji: emoji, CreatedAt: nowMillis()}).Error
			out.Changed = true
		case !add && exists:
			err = tx.Where("conversation_id = ? AND seq = ? AND user_id = ? AND emoji = ?", conv, seq, userID, emoji).
				Delete(&messageReactionRow{}).Error
			out.Changed = true
		}
		if err != nil {
			return fmt.Errorf("react on %s seq %d: %w", conv, seq, err)
		}
		var n int64
		if err := tx.Model(&messageReactionRow{}).Where("conversation_id = ? AND seq = ? AND emoji = ?", conv, seq, emoji).
			Count(&n).Error; err != nil {
			return fmt.Errorf("count reactions: %w", err)
		}
		out.Count = int(n)
		return nil
	})
	return out, err
}

// ReactionCount is one emoji's reactions on one message as viewer sees
// them: how many users, and whether viewer is one of them.
type ReactionCount struct {
	Emoji string
	Count int
	Me    bool
}

// Reactions returns the reactions of the messages at seqs of conv, per
// seq, each list ordered by first use of the emoji (then by emoji), Me for
// viewer. One query.
func (r *ActionRepo) Reactions(ctx context.Context, conv string, seqs []int64, viewer string) (map[int64][]ReactionCount, error) {
	out := map[int64][]ReactionCount{}
	if len(seqs) == 0 {
		return out, nil
	}
	var rows []struct {
		Seq   int64
		Emoji string
		N     int
		Me    int
		First int64
	}
	err := r.db.Gorm.WithContext(ctx).Model(&messageReactionRow{}).
		Select("seq, emoji, COUNT(*) AS n, MAX(CASE WHEN user_id = ? THEN 1 ELSE 0 END) AS me, MIN(created_at) AS first", viewer).
		Where("conversation_id = ? AND seq IN ?", conv, seqs).Group("seq, emoji").Order("seq, first, emoji").Scan(&rows).Error
	if err != nil {
		return nil, fmt.Errorf("reactions of %s: %w", conv, err)
	}
	for _, row := range rows {
		out[row.Seq] = append(out[row.Seq], ReactionCount{Emoji: row.Emoji, Count: row.N, Me: row.Me == 1})
	}
	return out, nil
}

// ReadCursor is one user's read position in a conversation.
type ReadCursor struct {
	UserID  string
	ReadSeq int64
}

// ReadersFrom returns the users of conv whose read_seq is at least seq
// (idx_conv_read: an index range scan, however large the group).
func (r *ActionRepo) ReadersFrom(ctx context.Context, conv string, seq int64) ([]ReadCursor, error) {
	var rows []ReadCursor
	err := r.db.Gorm.WithContext(ctx).Model(&seqUserRow{}).Select("user_id, read_seq").
		Where("conversation_id = ? AND read_seq >= ?", conv, seq).Scan(&rows).Error
	if err != nil {
		return nil, fmt.Errorf("readers of %s from seq %d: %w", conv, seq, err)
	}
	return rows, nil
}

// SentIn returns the seqs and senders of the readable, non-notification
// messages of conv with after < seq <= upto, newest first, at most limit.
func (r *ActionRepo) SentIn(ctx context.Context, conv string, after, upto int64, limit int) ([]domain.Message, error) {
	var rows []messageRow
	err := r.db.Gorm.WithContext(ctx).Select("conversation_id, seq, sender_id, server_msg_id, send_at").
		Where("conversation_id = ? AND seq > ? AND seq <= ? AND status = ? AND msg_type < ?", conv, after, upto,
			msgStatusNormal, int(domain.MsgNotificationMin)).Order("seq DESC").Limit(limit).Find(&rows).Error
	if err != nil {
		return nil, fmt.Errorf("messages of %s in (%d,%d]: %w", conv, after, upto, err)
	}
	return fromMessageRows(rows), nil
}
