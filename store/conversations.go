package store

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/nexo-im/nexo/domain"
)

// MentionAll in at_user_ids mentions every member (chat.AtAll).
const MentionAll = "all"

// ConversationRepo owns the conversations rows (each user's own view and
// settings of a conversation) and the reads the conversation list, newest
// seq and offline resend build on them. Every read is batched: its cost
// does not grow with one query per conversation (docs/sync.md).
type ConversationRepo struct{ db *DB }

// NewConversationRepo returns a ConversationRepo over db.
func NewConversationRepo(db *DB) *ConversationRepo { return &ConversationRepo{db: db} }

// ConversationState is one of a user's conversations as sync sees it: the
// row's settings, the conversation's saved max seq and newest message time,
// and the member's cursor with its visibility bounds (Cursor.MinSeq,
// Cursor.MaxSeq as in seq_users; zero when the member has no row yet).
type ConversationState struct {
	ConversationID string
	Type           domain.SessionType
	PeerUserID     string
	GroupID        string
	RecvMsgOpt     int
	IsPinned       bool
	HiddenSeq      int64
	CreatedAt      int64
	UpdatedAt      int64
	MaxSeq         int64 // seq_conversations.max_seq: highest saved seq
	MinSeq         int64 // seq_conversations.min_seq: lowest seq served
	LatestSendAt   int64 // send_at of the newest saved message, 0 if unknown
	Cursor         domain.Cursor
}

// VisibleMin is the first seq the owner may see (>= 1).
func (s *ConversationState) VisibleMin() int64 { return max(s.Cursor.MinSeq, s.MinSeq, 1) }

// VisibleMax is the highest saved seq the owner may see: the
// conversation's max_seq, capped for a member who left a group.
func (s *ConversationState) VisibleMax() int64 {
	if s.Cursor.MaxSeq > 0 && s.Cursor.MaxSeq < s.MaxSeq {
		return s.Cursor.MaxSeq
	}
	return s.MaxSeq
}

// stateRow is the scan target of stateQuery.
type stateRow struct {
	ConversationID   string
	ConversationType int
	PeerUserID       string
	GroupID          string
	RecvMsgOpt       int
	IsPinned         bool
	HiddenSeq        int64
	CreatedAt        int64
	UpdatedAt        int64
	ConvMaxSeq       int64
	ConvMinSeq       int64
	LatestSendAt     int64
	UserMinSeq       int64
	UserMaxSeq       int64
	ReadSeq          int64
	DeliveredSeq     int64
}

const (
	stateColumns = `c.conversation_id, c.conversation_type, c.peer_user_id, c.group_id, c.recv_msg_opt,
		c.is_pinned, c.hidden_seq, c.created_at, c.updated_at,
		COALESCE(sc.max_seq, 0) AS conv_max_seq, COALESCE(sc.min_seq, 0) AS conv_min_seq,
		COALESCE(sc.latest_send_at, 0) AS latest_send_at,
		COALESCE(su.min_seq, 0) AS user_min_seq, COALESCE(su.max_seq, 0) AS user_max_seq,
		COALESCE(su.read_seq, 0) AS read_seq, COALESCE(su.delivered_seq, 0) AS delivered_seq`
	// visibleMaxSQL is ConversationState.VisibleMax in SQL (CASE, not
	// LEAST/MIN, which differ between the dialects).
	visibleMaxSQL = `(CASE WHEN COALESCE(su.max_seq, 0) > 0 AND su.max_seq < COALESCE(sc.max_seq, 0)
		THEN su.max_seq ELSE COALESCE(sc.max_seq, 0) END)`
	// listedSQL: not deleted, or a message arrived since.
	listedSQL = `(c.hidden_seq = 0 OR ` + visibleMaxSQL + ` > c.hidden_seq)`
	// listOrderSQL: pinned first, then by the newest message (rows from
	// before migration 3 fall back to the row's updated_at).
	listOrderSQL = `c.is_pinned DESC, (CASE WHEN COALESCE(sc.latest_send_at, 0) > 0 THEN sc.latest_send_at
		ELSE c.updated_at END) DESC, c.conversation_id ASC`
)

// stateQuery selects ownerID's conversation states.
func (r *ConversationRepo) stateQuery(ctx context.Context, ownerID string) *gorm.DB {
	return r.db.Gorm.WithContext(ctx).Table("conversations AS c").
		Joins("LEFT JOIN seq_conversations sc ON sc.conversation_id = c.conversation_id").
		Joins("LEFT JOIN seq_users su ON su.user_id = c.owner_id AND su.conversation_id = c.conversation_id").
		Where("c.owner_id = ?", ownerID)
}

func (row *stateRow) toState(ownerID string) ConversationState {
	return ConversationState{
		ConversationID: row.ConversationID, Type: domain.SessionType(row.ConversationType), PeerUserID: row.PeerUserID,
		GroupID: row.GroupID, RecvMsgOpt: row.RecvMsgOpt, IsPinned: row.IsPinned, HiddenSeq: row.HiddenSeq,
		CreatedAt: row.CreatedAt, UpdatedAt: row.UpdatedAt, MaxSeq: row.ConvMaxSeq, MinSeq: row.ConvMinSeq,
		LatestSendAt: row.LatestSendAt,
		Cursor: domain.Cursor{UserID: ownerID, ConversationID: row.ConversationID, MinSeq: row.UserMinSeq,
			MaxSeq: row.UserMaxSeq, ReadSeq: row.ReadSeq, DeliveredSeq: row.DeliveredSeq},
	}
}

func toStates(ownerID string, rows []stateRow) []ConversationState {
	out := make([]ConversationState, len(rows))
	for i := range rows {
		out[i] = rows[i].toState(ownerID)
	}
	return out
}

// List returns a page of ownerID's listed conversations — not deleted, or
// with a message above the seq it was deleted at — pinned first, then by
// newest message, and how many are listed in all. Two queries.
func (r *ConversationRepo) List(ctx context.Context, ownerID string, offset, limit int) ([]ConversationState, int64, error) {
	var total int64
	if err := r.stateQuery(ctx, ownerID).Where(listedSQL).Count(&total).Error; err != nil {
		return nil, 0, fmt.Errorf("count conversations of %s: %w", ownerID, err)
	}
	var rows []stateRow
	err := r.stateQuery(ctx, ownerID).Select(stateColumns).Where(listedSQL).
		Order(listOrderSQL).Offset(offset).Limit(limit).Scan(&rows).Error
	if err != nil {
		return nil, 0, fmt.Errorf("list conversations of %s: %w", ownerID, err)
	}
	return toStates(ownerID, rows), total, nil
}

// States returns ownerID's conversation states among conversationIDs
// (those without a row are absent), or all of them, deleted ones included,
// when conversationIDs is nil. One query per 500 IDs.
func (r *ConversationRepo) States(ctx context.Context, ownerID string, conversationIDs []string) ([]ConversationState, error) {
	if conversationIDs == nil {
		var rows []stateRow
		if err := r.stateQuery(ctx, ownerID).Select(stateColumns).Scan(&rows).Error; err != nil {
			return nil, fmt.Errorf("conversations of %s: %w", ownerID, err)
		}
		return toStates(ownerID, rows), nil
	}
	var out []ConversationState
	for start := 0; start < len(conversationIDs); start += rowChunk {
		chunk := conversationIDs[start:min(start+rowChunk, len(conversationIDs))]
		var rows []stateRow
		err := r.stateQuery(ctx, ownerID).Select(stateColumns).Where("c.conversation_id IN ?", chunk).Scan(&rows).Error
		if err != nil {
			return nil, fmt.Errorf("%d conversations of %s: %w", len(chunk), ownerID, err)
		}
		out = append(out, toStates(ownerID, rows)...)
	}
	return out, nil
}

// StatesPage returns up to limit of ownerID's conversation states, deleted
// ones included, in conversation ID order, those after afterID ("" from the
// first): keyset paging for the newest seqs of every conversation.
func (r *ConversationRepo) StatesPage(ctx context.Context, ownerID, afterID string, limit int) ([]ConversationState, error) {
	var rows []stateRow
	q := r.stateQuery(ctx, ownerID).Select(stateColumns)
	if afterID != "" {
		q = q.Where("c.conversation_id > ?", afterID)
	}
	if err := q.Order("c.conversation_id ASC").Limit(limit).Scan(&rows).Error; err != nil {
		return nil, fmt.Errorf("page of conversations of %s: %w", ownerID, err)
	}
	return toStates(ownerID, rows), nil
}

// Undelivered returns ownerID's conversations holding saved messages it
// may see above its delivered_seq (offline resend), newest message first.
// One query, filtered in the database.
func (r *ConversationRepo) Undelivered(ctx context.Context, ownerID string) ([]ConversationState, error) {
	var rows []stateRow
	err := r.stateQuery(ctx, ownerID).Select(stateColumns).
		Where(visibleMaxSQL + " > COALESCE(su.delivered_seq, 0) AND " + visibleMaxSQL + " >= COALESCE(su.min_seq, 0)").
		Order("COALESCE(sc.latest_send_at, 0) DESC, c.conversation_id ASC").Scan(&rows).Error
	if err != nil {
		return nil, fmt.Errorf("undelivered conversations of %s: %w", ownerID, err)
	}
	return toStates(ownerID, rows), nil
}

// ConversationSettings changes a user's own settings of a conversation;
// nil fields stay. The row is created when missing (Type, PeerUserID and
// GroupID describe it then).
type ConversationSettings struct {
	OwnerID        string
	ConversationID string
	Type           domain.SessionType
	PeerUserID     string
	GroupID        string
	IsPinned       *bool
	RecvMsgOpt     *int
}

// UpdateSettings applies s in one upsert; updated_at becomes now.
func (r *ConversationRepo) UpdateSettings(ctx context.Context, s ConversationSettings) error {
	now := nowMillis()
	row := conversationRow{ConversationID: s.ConversationID, OwnerID: s.OwnerID, ConversationType: int(s.Type),
		PeerUserID: s.PeerUserID, GroupID: s.GroupID, CreatedAt: now, UpdatedAt: now}
	set := map[string]any{"updated_at": now}
	if s.IsPinned != nil {
		row.IsPinned = *s.IsPinned
		set["is_pinned"] = *s.IsPinned
	}
	if s.RecvMsgOpt != nil {
		row.RecvMsgOpt = *s.RecvMsgOpt
		set["recv_msg_opt"] = *s.RecvMsgOpt
	}
	err := r.db.Gorm.WithContext(ctx).Clauses(clause.OnConflict{
		Columns:   []clause.Column{{Name: "owner_id"}, {Name: "conversation_id"}},
		DoUpdates: clause.Assignments(set),
	}).Create(&row).Error
	if err != nil {
		return fmt.Errorf("update conversation %s of %s: %w", s.ConversationID, s.OwnerID, err)
	}
	return nil
}

// NoPushSingle lists ownerID's single-chat conversations with recv_msg_opt 1
// (no push): one indexed query (idx_owner) returning, usually, nothing.
func (r *ConversationRepo) NoPushSingle(ctx context.Context, ownerID string) ([]string, error) {
	var ids []string
	err := r.db.Gorm.WithContext(ctx).Model(&conversationRow{}).
		Where("owner_id = ? AND conversation_type = ? AND recv_msg_opt = ?", ownerID, int(domain.SessionSingle), 1).
		Pluck("conversation_id", &ids).Error
	if err != nil {
		return nil, fmt.Errorf("no-push conversations of %s: %w", ownerID, err)
	}
	return ids, nil
}

// Hide takes the conversation out of ownerID's list until a message above
// seq: hidden_seq only rises. A user without a row has nothing to hide.
func (r *ConversationRepo) Hide(ctx context.Context, ownerID, conversationID string, seq int64) error {
	err := r.db.Gorm.WithContext(ctx).Model(&conversationRow{}).
		Where("owner_id = ? AND conversation_id = ?", ownerID, conversationID).
		Update("hidden_seq", gorm.Expr("CASE WHEN hidden_seq < ? THEN ? ELSE hidden_seq END", seq, seq)).Error
	if err != nil {
		return fmt.Errorf("hide conversation %s of %s: %w", conversationID, ownerID, err)
	}
	return nil
}

// SeqRange is the seqs After < seq <= Upto of one conversation.
type SeqRange struct {
	ConversationID string
	After          int64
	Upto           int64
}

// rangesPerQuery bounds the OR-ed ranges of one statement.
const rangesPerQuery = 200

// rangeWhere renders ranges as "(conv = ? AND seq > ? AND seq <= ?) OR …"
// over the columns of alias (uk_conv_seq serves each as a range scan).
func rangeWhere(alias string, ranges []SeqRange) (string, []any) {
	var sb strings.Builder
	args := make([]any, 0, 3*len(ranges))
	sb.WriteByte('(')
	for i, rg := range ranges {
		if i > 0 {
			sb.WriteString(" OR ")
		}
		fmt.Fprintf(&sb, "(%[1]s.conversation_id = ? AND %[1]s.seq > ? AND %[1]s.seq <= ?)", alias)
		args = append(args, rg.ConversationID, rg.After, rg.Upto)
	}
	sb.WriteByte(')')
	return sb.String(), args
}

// nonEmpty drops ranges that hold no seq.
func nonEmpty(ranges []SeqRange) []SeqRange {
	out := make([]SeqRange, 0, len(ranges))
	for _, rg := range ranges {
		if rg.Upto > rg.After {
			out = append(out, rg)
		}
	}
	return out
}

// chunks calls fn for each slice of at most rangesPerQuery ranges.
func chunks(ranges []SeqRange, fn func([]SeqRange) error) error {
	ranges = nonEmpty(ranges)
	for start := 0; start < len(ranges); start += rangesPerQuery {
		if err := fn(ranges[start:min(start+rangesPerQuery, len(ranges))]); err != nil {
			return err
		}
	}
	return nil
}

// convCount is one row of a per-conversation count.
type convCount struct {
	ConversationID string
	N              int64
}

// countPerConversation runs count once per chunk of ranges, with the WHERE
// clause (and its args) that selects the chunk's ranges on table alias,
// and returns the counts it scans into rows by conversation ID.
func countPerConversation(ranges []SeqRange, alias string, count func(where string, args []any, rows *[]convCount) error) (map[string]int64, error) {
	out := map[string]int64{}
	err := chunks(ranges, func(rs []SeqRange) error {
		where, args := rangeWhere(alias, rs)
		var rows []convCount
		err := count(where, args, &rows)
		for _, row := range rows {
			out[row.ConversationID] = row.N
		}
		return err
	})
	return out, err
}

// UnreadCounts counts, per conversation, the readable messages in its
// range not sent by userID: status normal, and not a notification
// (msg_type >= 1500: group changes, revoke notices). A conversation with
// none is absent. One query per 200 ranges.
func (r *ConversationRepo) UnreadCounts(ctx context.Context, userID string, ranges []SeqRange) (map[string]int64, error) {
	out, err := countPerConversation(ranges, "m", func(where string, args []any, rows *[]convCount) error {
		return r.db.Gorm.WithContext(ctx).Table("messages AS m").Select("m.conversation_id, COUNT(*) AS n").
			Where(where, args...).
			Where("m.sender_id <> ? AND m.status = ? AND m.msg_type < ?", userID, msgStatusNormal, int(domain.MsgNotificationMin)).
			Group("m.conversation_id").Scan(rows).Error
	})
	if err != nil {
		return nil, fmt.Errorf("unread counts of %s: %w", userID, err)
	}
	return out, nil
}

// MentionCounts counts, per conversation, the readable messages in its
// range that mention userID or "all" and were not sent by userID. One
// query per 200 ranges.
func (r *ConversationRepo) MentionCounts(ctx context.Context, userID string, ranges []SeqRange) (map[string]int64, error) {
	out, err := countPerConversation(ranges, "mm", func(where string, args []any, rows *[]convCount) error {
		return r.db.Gorm.WithContext(ctx).Table("message_mentions AS mm").
			Select("mm.conversation_id, COUNT(DISTINCT mm.seq) AS n").
			Joins("JOIN messages m ON m.conversation_id = mm.conversation_id AND m.seq = mm.seq").
			Where("mm.user_id IN ? AND mm.sender_id <> ? AND m.status = ?", []string{userID, MentionAll}, userID, msgStatusNormal).
			Where(where, args...).Group("mm.conversation_id").Scan(rows).Error
	})
	if err != nil {
		return nil, fmt.Errorf("mention counts of %s: %w", userID, err)
	}
	return out, nil
}

// latestWindow is how far below a range's top Latest looks in its batched
// query; a conversation whose newest 64 seqs hold no message (gaps, failed
// saves) costs one more query.
const latestWindow = 64

// Latest returns, per conversation, the newest message of its range that
// is not a failed placeholder (revoked ones included: the list shows that
// they were revoked). One query per 200 ranges, plus one per conversation
// whose newest 64 seqs are all gaps. It is LatestFor with no viewer.
func (r *ConversationRepo) Latest(ctx context.Context, ranges []SeqRange) (map[string]domain.Message, error) {
	return r.LatestFor(ctx, "", ranges)
}

// LatestFor is Latest as viewer sees it: the messages viewer deleted for
// itself (message_hidden) are left out ("" leaves out none).
func (r *ConversationRepo) LatestFor(ctx context.Context, viewer string, ranges []SeqRange) (map[string]domain.Message, error) {
	out := map[string]domain.Message{}
	windows := make([]SeqRange, 0, len(ranges))
	for _, rg := range nonEmpty(ranges) {
		windows = append(windows, SeqRange{rg.ConversationID, max(rg.After, rg.Upto-latestWindow), rg.Upto})
	}
	notHidden, hiddenArgs := "", []any(nil)
	if viewer != "" {
		notHidden = ` AND NOT EXISTS (SELECT 1 FROM message_hidden h WHERE h.user_id = ? AND h.conversation_id = m2.conversation_id AND h.seq = m2.seq)`
		hiddenArgs = []any{viewer}
	}
	err := chunks(windows, func(rs []SeqRange) error {
		where, args := rangeWhere("m2", rs)
		var rows []messageRow
		all := append([]any{msgStatusFailed}, args...)
		all = append(all, hiddenArgs...)
		err := r.db.Gorm.WithContext(ctx).Raw(`SELECT * FROM messages WHERE (conversation_id, seq) IN (
			SELECT m2.conversation_id, MAX(m2.seq) FROM messages m2 WHERE m2.status <> ? AND `+where+notHidden+`
			GROUP BY m2.conversation_id)`, all...).Scan(&rows).Error
		for i := range rows {
			out[rows[i].ConversationID] = fromMessageRow(&rows[i])
		}
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("latest messages of %d conversations: %w", len(ranges), err)
	}
	for _, rg := range nonEmpty(ranges) {
		if _, ok := out[rg.ConversationID]; ok || rg.Upto-latestWindow <= rg.After {
			continue
		}
		var rows []messageRow
		q := r.db.Gorm.WithContext(ctx).Table("messages AS m2").Where("m2.conversation_id = ? AND m2.seq > ? AND m2.seq <= ? AND m2.status <> ?",
			rg.ConversationID, rg.After, rg.Upto, msgStatusFailed)
		if viewer != "" {
			q = q.Where(notHidden[len(" AND "):], viewer)
		}
		err := q.Order("m2.seq DESC").Limit(1).Find(&rows).Error
		if err != nil {
			return nil, fmt.Errorf("latest message of %s: %w", rg.ConversationID, err)
		}
		if len(rows) == 1 {
			out[rg.ConversationID] = fromMessageRow(&rows[0])
		}
	}
	return out, nil
}

// Messages returns the stored messages of ranges, by conversation then
// ascending seq; failed placeholders are left out. One query per 200
// ranges: callers bound the ranges (offline resend sizes them to its caps).
// It is MessagesFor with no viewer.
func (r *ConversationRepo) Messages(ctx context.Context, ranges []SeqRange) ([]domain.Message, error) {
	return r.MessagesFor(ctx, "", ranges)
}

// MessagesFor is Messages as viewer sees them: the messages viewer deleted
// for itself (message_hidden) are left out ("" leaves out none).
func (r *ConversationRepo) MessagesFor(ctx context.Context, viewer string, ranges []SeqRange) ([]domain.Message, error) {
	var out []domain.Message
	err := chunks(ranges, func(rs []SeqRange) error {
		where, args := rangeWhere("m", rs)
		var rows []messageRow
		q := r.db.Gorm.WithContext(ctx).Table("messages AS m").Where(where, args...).Where("m.status <> ?", msgStatusFailed)
		if viewer != "" {
			q = q.Where("NOT EXISTS (SELECT 1 FROM message_hidden h WHERE h.user_id = ? AND h.conversation_id = m.conversation_id AND h.seq = m.seq)", viewer)
		}
		err := q.Order("m.conversation_id, m.seq").Find(&rows).Error
		out = append(out, fromMessageRows(rows)...)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("messages of %d ranges: %w", len(ranges), err)
	}
	return out, nil
}

// Senders returns, per conversation, the distinct senders of the readable,
// non-notification messages of its range (who gets a group read receipt).
// One query per 200 ranges.
func (r *ConversationRepo) Senders(ctx context.Context, ranges []SeqRange) (map[string][]string, error) {
	out := map[string][]string{}
	err := chunks(ranges, func(rs []SeqRange) error {
		where, args := rangeWhere("m", rs)
		var rows []struct {
			ConversationID string
			SenderID       string
		}
		err := r.db.Gorm.WithContext(ctx).Table("messages AS m").Distinct("m.conversation_id", "m.sender_id").
			Where(where, args...).Where("m.status = ? AND m.msg_type < ?", msgStatusNormal, int(domain.MsgNotificationMin)).
			Scan(&rows).Error
		for _, row := range rows {
			out[row.ConversationID] = append(out[row.ConversationID], row.SenderID)
		}
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("senders of %d ranges: %w", len(ranges), err)
	}
	for _, s := range out {
		sort.Strings(s)
	}
	return out, nil
}
