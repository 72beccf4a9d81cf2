package store

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	gomysql "github.com/go-sql-driver/mysql"

	"github.com/nexo-im/nexo/domain"
)

// ErrSearchTimeout is a search the database gave up on (its statement
// time limit) or that ran past its context's deadline.
var ErrSearchTimeout = errors.New("search timed out")

// SearchQuery is one search by UserID. Keyword is matched as literal text
// (no operator of any backend applies). The optional filters narrow it;
// From and To bound send_at (Unix ms, inclusive, 0 = open).
type SearchQuery struct {
	UserID         string
	Keyword        string
	ConversationID string
	SenderID       string
	MsgTypes       []domain.MsgType
	From, To       int64
	// Before continues a newest-first search: only hits older than it.
	Before *SearchPosition
	// Relevance orders by the backend's rank (then newest first); Offset
	// pages through that order.
	Relevance bool
	Offset    int
	Limit     int
	// Timeout bounds the statement on the server as well (MariaDB
	// max_statement_time, MySQL MAX_EXECUTION_TIME); 0 = none.
	Timeout time.Duration
}

// SearchPosition is a hit's place in the newest-first order.
type SearchPosition struct {
	SendAt         int64
	ConversationID string
	Seq            int64
}

// SearchHit is a matching message and the indexed text it matched in
// (Field names it: "text", "file" or "search_text").
type SearchHit struct {
	Message domain.Message
	Field   string
	Body    string
}

// searchHitRow is the scan target of Search.
type searchHitRow struct {
	Msg         messageRow `gorm:"embedded"`
	SearchField string
	SearchBody  string
}

// visibleSQL is the caller's visibility, the query's first filter: a
// party of a single chat; in a group, a member's seqs from its join_seq
// and, once it left, up to its cap (seq_users.max_seq, as
// store.GroupRepo.State and group.Members.Bounds read it); in any
// conversation, nothing at or below the seq the caller deleted it at.
// Arguments: user, user.
const visibleSQL = `((s.session_type = 1 AND (s.sender_id = ? OR s.recv_id = ?))
	OR (s.session_type = 3 AND gm.user_id IS NOT NULL AND s.seq >= gm.join_seq
		AND (gm.status = 0 OR s.seq <= (CASE WHEN COALESCE(su.max_seq, 0) > gm.join_seq THEN su.max_seq ELSE gm.join_seq END))))
	AND s.seq > COALESCE(c.hidden_seq, 0)`

// visibleJoins bring in the caller's membership, cap and deletion point.
// Arguments: user, user, user.
const visibleJoins = `
	LEFT JOIN group_members gm ON s.session_type = 3 AND gm.group_id = s.group_id AND gm.user_id = ?
	LEFT JOIN seq_users su ON s.session_type = 3 AND su.user_id = ? AND su.conversation_id = s.conversation_id
	LEFT JOIN conversations c ON c.owner_id = ? AND c.conversation_id = s.conversation_id`

// Search returns up to q.Limit messages matching q.Keyword that q.UserID
// may see, newest first (or by rank with q.Relevance). Only readable
// messages match: recalled and failed ones never do. ErrSearchTimeout when
// the database or the context's deadline stopped it.
func (r *SearchRepo) Search(ctx context.Context, q SearchQuery) ([]SearchHit, error) {
	sqlText, args := r.searchSQL(q)
	var rows []searchHitRow
	err := r.db.Gorm.WithContext(ctx).Raw(sqlText, args...).Scan(&rows).Error
	if err != nil {
		if isStatementTimeout(err) || errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return nil, fmt.Errorf("search of %s: %w", q.UserID, ErrSearchTimeout)
		}
		return nil, fmt.Errorf("search of %s: %w", q.UserID, err)
	}
	hits := make([]SearchHit, len(rows))
	for i := range rows {
		hits[i] = SearchHit{Message: fromMessageRow(&rows[i].Msg), Field: rows[i].SearchField, Body: rows[i].SearchBody}
	}
	return hits, nil
}

// isStatementTimeout: MariaDB's max_statement_time (1969), MySQL's
// MAX_EXECUTION_TIME (3024).
func isStatementTimeout(err error) bool {
	var me *gomysql.MySQLError
	return errors.As(err, &me) && (me.Number == 1969 || me.Number == 3024)
}

// searchSQL builds the statement: the backend's match, the visibility
// joins and filter, the caller's filters, the order and the page.
func (r *SearchRepo) searchSQL(q SearchQuery) (string, []any) {
	var sb strings.Builder
	var args []any
	match, matchArgs, rank, rankArgs := r.matchSQL(q.Keyword)
	switch {
	case r.backend == SearchMroonga && q.Timeout > 0:
		fmt.Fprintf(&sb, "SET STATEMENT max_statement_time = %.3f FOR ", q.Timeout.Seconds())
		sb.WriteString("SELECT ")
	case r.backend == SearchNgram && q.Timeout > 0:
		fmt.Fprintf(&sb, "SELECT /*+ MAX_EXECUTION_TIME(%d) */ ", q.Timeout.Milliseconds())
	default:
		sb.WriteString("SELECT ")
	}
	sb.WriteString("m.*, s.field AS search_field, s.body AS search_body FROM ")
	switch {
	case r.backend == SearchFTS5 && ftsIndexed(q.Keyword):
		sb.WriteString("message_search_fts f JOIN message_search s ON s.id = f.rowid JOIN")
	case r.backend == SearchFTS5:
		// A scan (the keyword is too short for the index): SQLite's CROSS
		// JOIN keeps message_search the outer table, so the scan reads
		// the short search rows, not the messages with their content.
		sb.WriteString("message_search s CROSS JOIN")
	default:
		sb.WriteString("message_search s JOIN")
	}
	sb.WriteString(" messages m ON m.conversation_id = s.conversation_id AND m.seq = s.seq")
	sb.WriteString(visibleJoins)
	args = append(args, q.UserID, q.UserID, q.UserID)
	sb.WriteString(" WHERE ")
	sb.WriteString(visibleSQL)
	args = append(args, q.UserID, q.UserID)
	// Messages the caller deleted for itself never match (docs/actions.md).
	sb.WriteString(" AND NOT EXISTS (SELECT 1 FROM message_hidden h WHERE h.user_id = ? AND h.conversation_id = s.conversation_id AND h.seq = s.seq)")
	args = append(args, q.UserID)
	sb.WriteString(" AND m.status = 0 AND ")
	sb.WriteString(match)
	args = append(args, matchArgs...)
	if q.ConversationID != "" {
		sb.WriteString(" AND s.conversation_id = ?")
		args = append(args, q.ConversationID)
	}
	if q.SenderID != "" {
		sb.WriteString(" AND s.sender_id = ?")
		args = append(args, q.SenderID)
	}
	if len(q.MsgTypes) > 0 {
		sb.WriteString(" AND s.msg_type IN (?" + strings.Repeat(",?", len(q.MsgTypes)-1) + ")")
		for _, t := range q.MsgTypes {
			args = append(args, int(t))
		}
	}
	if q.From > 0 {
		sb.WriteString(" AND s.send_at >= ?")
		args = append(args, q.From)
	}
	if q.To > 0 {
		sb.WriteString(" AND s.send_at <= ?")
		args = append(args, q.To)
	}
	const newest = "s.send_at DESC, s.conversation_id DESC, s.seq DESC"
	if q.Relevance && rank != "" {
		sb.WriteString(" ORDER BY " + rank + ", " + newest + " LIMIT ? OFFSET ?")
		args = append(args, rankArgs...)
		args = append(args, q.Limit, q.Offset)
		return sb.String(), args
	}
	if p := q.Before; p != nil {
		sb.WriteString(" AND (s.send_at < ? OR (s.send_at = ? AND (s.conversation_id < ? OR (s.conversation_id = ? AND s.seq < ?))))")
		args = append(args, p.SendAt, p.SendAt, p.ConversationID, p.ConversationID, p.Seq)
	}
	sb.WriteString(" ORDER BY " + newest + " LIMIT ?")
	args = append(args, q.Limit)
	return sb.String(), args
}

// ftsIndexed reports whether SQLite's trigram index can answer keyword:
// a phrase of 3 characters or more.
func ftsIndexed(keyword string) bool { return utf8.RuneCountInString(keyword) >= 3 }

// matchSQL is the backend's condition for keyword as literal text, and
// its rank expression ("" when the backend cannot rank this keyword).
func (r *SearchRepo) matchSQL(keyword string) (match string, args []any, rank string, rankArgs []any) {
	switch r.backend {
	case SearchFTS5:
		// A trigram index matches phrases of 3 characters or more; a
		// shorter keyword (2 CJK characters) is a LIKE, which the same
		// table answers by scanning.
		if ftsIndexed(keyword) {
			return "message_search_fts MATCH ?", []any{fts5Phrase(keyword)}, "f.rank", nil
		}
		// On the table itself, not through the FTS table: the scan then
		// reads each body once and joins messages only for the matches.
		return `s.body LIKE ? ESCAPE '\'`, []any{likePattern(keyword)}, "", nil
	case SearchMroonga:
		p := groongaPhrase(keyword)
		return "MATCH(s.body) AGAINST(? IN BOOLEAN MODE)", []any{p},
			"MATCH(s.body) AGAINST(? IN BOOLEAN MODE) DESC", []any{p}
	default:
		like := `s.body LIKE ? ESCAPE '\\'`
		p := ngramPhrases(keyword)
		if p == "" {
			return like, []any{likePattern(keyword)}, "", nil
		}
		return "MATCH(s.body) AGAINST(? IN BOOLEAN MODE) AND " + like, []any{p, likePattern(keyword)},
			"MATCH(s.body) AGAINST(? IN BOOLEAN MODE) DESC", []any{p}
	}
}
