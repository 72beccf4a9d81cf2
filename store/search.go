package store

import (
	"context"
	"fmt"
	"strings"
	"unicode/utf8"

	"gorm.io/gorm"

	"github.com/nexo-im/nexo/domain"
)

// SearchDoc is one searchable message: where it is, who may see it and
// the text to match. Field names what Body holds ("text", "file",
// "search_text"), for the highlight.
type SearchDoc struct {
	ConversationID string
	Seq            int64
	SessionType    domain.SessionType
	SenderID       string
	RecvID         string
	GroupID        string
	MsgType        domain.MsgType
	SendAt         int64
	Field          string
	Body           string
}

// SearchRepo owns the message_search table: the searchable text of saved
// messages, written in batches by the indexing stage (never inside the
// save's transaction), and the visibility-first query over it.
type SearchRepo struct {
	db      *DB
	backend SearchBackend
}

// NewSearchRepo detects db's full-text backend and creates the search
// tables if missing. On MariaDB without Mroonga it fails with
// ErrMroongaMissing, naming the package to install.
func NewSearchRepo(ctx context.Context, db *DB) (*SearchRepo, error) {
	b, err := detectSearchBackend(ctx, db)
	if err != nil {
		return nil, err
	}
	if err := ensureSearchSchema(ctx, db, b); err != nil {
		return nil, err
	}
	return &SearchRepo{db: db, backend: b}, nil
}

// Backend is the full-text engine in use.
func (r *SearchRepo) Backend() SearchBackend { return r.backend }

// searchRowsPerInsert bounds one INSERT's rows (10 arguments each).
const searchRowsPerInsert = 200

// Index writes docs, skipping any (conversation_id, seq) already indexed:
// a redelivered batch changes nothing.
func (r *SearchRepo) Index(ctx context.Context, docs []SearchDoc) error {
	for start := 0; start < len(docs); start += searchRowsPerInsert {
		part := docs[start:min(start+searchRowsPerInsert, len(docs))]
		var sb strings.Builder
		args := make([]any, 0, 10*len(part))
		if r.db.Dialect == SQLite {
			sb.WriteString("INSERT INTO ")
		} else {
			sb.WriteString("INSERT IGNORE INTO ")
		}
		sb.WriteString("message_search (conversation_id, seq, session_type, sender_id, recv_id, group_id, msg_type, send_at, field, body) VALUES ")
		for i, d := range part {
			if i > 0 {
				sb.WriteByte(',')
			}
			sb.WriteString("(?,?,?,?,?,?,?,?,?,?)")
			args = append(args, d.ConversationID, d.Seq, int(d.SessionType), d.SenderID, d.RecvID, d.GroupID,
				int(d.MsgType), d.SendAt, d.Field, d.Body)
		}
		if r.db.Dialect == SQLite {
			sb.WriteString(" ON CONFLICT (conversation_id, seq) DO NOTHING")
		}
		if err := r.db.Gorm.WithContext(ctx).Exec(sb.String(), args...).Error; err != nil {
			return fmt.Errorf("index %d messages: %w", len(part), err)
		}
	}
	return nil
}

// Indexed reports how many messages the search table holds.
func (r *SearchRepo) Indexed(ctx context.Context) (int64, error) {
	var n int64
	err := r.db.Gorm.WithContext(ctx).Raw("SELECT COUNT(*) FROM message_search").Scan(&n).Error
	return n, err
}

// ReindexPage is one page of stored messages for the reindex command.
type ReindexPage struct {
	Messages []domain.Message
	LastID   int64 // the messages.id to resume after
}

// MessagesAfter returns up to limit readable messages with messages.id >
// afterID sent at or after since (Unix ms, 0 = all), by id.
func (r *SearchRepo) MessagesAfter(ctx context.Context, afterID, since int64, limit int) (ReindexPage, error) {
	var rows []messageRow
	err := r.db.Gorm.WithContext(ctx).Where("id > ? AND send_at >= ? AND status = ?", afterID, since, msgStatusNormal).
		Order("id").Limit(limit).Find(&rows).Error
	if err != nil {
		return ReindexPage{}, fmt.Errorf("messages after id %d: %w", afterID, err)
	}
	page := ReindexPage{Messages: fromMessageRows(rows), LastID: afterID}
	if len(rows) > 0 {
		page.LastID = rows[len(rows)-1].ID
	}
	return page, nil
}

// CountMessagesAfter counts what MessagesAfter would page through.
func (r *SearchRepo) CountMessagesAfter(ctx context.Context, afterID, since int64) (int64, error) {
	var n int64
	err := r.db.Gorm.WithContext(ctx).Model(&messageRow{}).
		Where("id > ? AND send_at >= ? AND status = ?", afterID, since, msgStatusNormal).Count(&n).Error
	return n, err
}

// ReindexState returns the saved progress of the reindex run name: the
// message id it reached and the since it ran with (zeros when none).
func (r *SearchRepo) ReindexState(ctx context.Context, name string) (afterID, since int64, err error) {
	var row struct{ AfterID, Since int64 }
	err = r.db.Gorm.WithContext(ctx).Raw("SELECT after_id, since FROM search_state WHERE name = ?", name).Scan(&row).Error
	return row.AfterID, row.Since, err
}

// SaveReindexState records the reindex run's progress.
func (r *SearchRepo) SaveReindexState(ctx context.Context, name string, afterID, since int64) error {
	return r.db.Gorm.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		if err := tx.Exec("DELETE FROM search_state WHERE name = ?", name).Error; err != nil {
			return err
		}
		return tx.Exec("INSERT INTO search_state (name, after_id, since) VALUES (?, ?, ?)", name, afterID, since).Error
	})
}

// ClearReindexState forgets the run's progress (it finished).
func (r *SearchRepo) ClearReindexState(ctx context.Context, name string) error {
	return r.db.Gorm.WithContext(ctx).Exec("DELETE FROM search_state WHERE name = ?", name).Error
}

// likePattern is %keyword% with LIKE's wildcards and the escape character
// taken literally (ESCAPE '\').
func likePattern(keyword string) string {
	r := strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`)
	return "%" + r.Replace(keyword) + "%"
}

// fts5Phrase is keyword as one FTS5 phrase: quotes doubled, so every
// character (operators included) is literal.
func fts5Phrase(keyword string) string {
	return `"` + strings.ReplaceAll(keyword, `"`, `""`) + `"`
}

// groongaPhrase is keyword as one phrase of Mroonga's boolean mode
// (Groonga's query syntax): backslash and quote escaped.
func groongaPhrase(keyword string) string {
	r := strings.NewReplacer(`\`, `\\`, `"`, `\"`)
	return `"` + r.Replace(keyword) + `"`
}

// ngramPhrases is keyword for InnoDB's boolean mode, which cannot escape a
// quote: the parts between quotes, each a required phrase; parts shorter
// than the ngram token (2) are left to the LIKE that goes with it. "" when
// no part is long enough.
func ngramPhrases(keyword string) string {
	var parts []string
	for _, p := range strings.Split(keyword, `"`) {
		if p = strings.TrimSpace(p); utf8.RuneCountInString(p) >= 2 {
			parts = append(parts, `+"`+p+`"`)
		}
	}
	return strings.Join(parts, " ")
}
