package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"gorm.io/gorm"

	"github.com/nexo-im/nexo/domain"
)

// MessageRepo owns the messages table and the bookkeeping a save implies
// (saved max seq, the sender's cursor, both parties' conversation rows).
type MessageRepo struct{ db *DB }

// NewMessageRepo returns a MessageRepo over db.
func NewMessageRepo(db *DB) *MessageRepo { return &MessageRepo{db: db} }

// SaveOutcome says what SaveBatch did with one message.
type SaveOutcome int

const (
	// Saved: the row is stored (now, or by an earlier attempt of the same
	// message — a redelivered stream entry).
	Saved SaveOutcome = iota + 1
	// Duplicate: another message with the same (sender_id, client_msg_id) was
	// stored first — a retry whose idempotency key had expired. Original is
	// that message; the new seq stays a gap.
	Duplicate
	// SeqTaken: the (conversation_id, seq) belongs to a different message.
	// Only possible if Redis handed out a seq twice (a failover that lost
	// writes); the caller must re-sequence the message.
	SeqTaken
)

// SaveResult is the outcome for the message at the same index of the batch.
type SaveResult struct {
	Outcome  SaveOutcome
	Original domain.Message // the stored message (for Duplicate, the first one)
}

// SaveBatch stores msgs in one transaction with one multi-row INSERT that
// skips rows conflicting on any unique key, then resolves every skipped row
// through uk_sender_client_msg: the same server_msg_id means already saved,
// another means Duplicate, none means SeqTaken. For every conversation it
// advances seq_conversations.max_seq over the batch's seqs (gaps of
// duplicates included), the sender's read_seq and delivered_seq (a sender
// has read its own message), and upserts both parties' single-chat
// conversation rows. It also keeps each conversation's newest send_at
// (seq_conversations.latest_send_at), writes the mention rows of the
// stored messages, and applies recalls recorded before their message was
// saved (a revoked message comes back with Original.Status revoked); see
// docs/sync.md. Messages must not repeat a server_msg_id within msgs.
//
// On MySQL/MariaDB the common case — every row new — is one round trip,
// COMMIT included (saveOneTrip); a batch with a row already there is
// rolled back and saved statement by statement. On SQLite the statements
// of a batch of up to 9 messages run prepared (stmtcache.go). Errors are the database's;
// see IsRetryable.
func (r *MessageRepo) SaveBatch(ctx context.Context, msgs []domain.Message) ([]SaveResult, error) {
	if len(msgs) == 0 {
		return nil, nil
	}
	now := nowMillis()
	rows := make([]messageRow, len(msgs))
	for i := range msgs {
		rows[i] = toMessageRow(&msgs[i], now)
	}
	if r.db.Dialect == MySQL {
		res, err := r.saveOneTrip(ctx, msgs, rows, now)
		if !errors.Is(err, errSlowPath) {
			return res, err
		}
	}
	results := make([]SaveResult, len(msgs))
	err := r.db.Gorm.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		inserted, err := r.db.execTx(ctx, tx, r.db.insertMessagesSQL(rows))
		if err != nil {
			return fmt.Errorf("insert %d messages: %w", len(rows), err)
		}
		if inserted == int64(len(rows)) {
			// Every row went in (the common case): nothing to resolve, so
			// no lookup. Affected rows count inserted rows only — MariaDB
			// without RETURNING and without clientFoundRows (OpenMySQL
			// enforces both), SQLite's changes().
			allSaved(rows, results)
			return r.finishBatch(ctx, tx, msgs, results, now)
		}
		stored, err := r.lookupByClientID(tx, msgs)
		if err != nil {
			return err
		}
		for i := range msgs {
			m := &msgs[i]
			orig, ok := stored[domain.ClientMsgKey{SenderID: m.SenderID, ClientMsgID: m.ClientMsgID}]
			switch {
			case !ok:
				results[i] = SaveResult{Outcome: SeqTaken}
			case orig.ServerMsgID == m.ServerMsgID:
				results[i] = SaveResult{Outcome: Saved, Original: orig}
			default:
				results[i] = SaveResult{Outcome: Duplicate, Original: orig}
			}
		}
		return r.finishBatch(ctx, tx, msgs, results, now)
	})
	if r.db.stmts != nil {
		r.db.stmts.prepareMissed(ctx)
	}
	if err != nil {
		return nil, err
	}
	return results, nil
}

// allSaved fills results for a batch whose every row was inserted.
func allSaved(rows []messageRow, results []SaveResult) {
	for i := range rows {
		results[i] = SaveResult{Outcome: Saved, Original: fromMessageRow(&rows[i])}
	}
}

// finishBatch is SaveBatch's bookkeeping once every row's outcome is known
// (bookkeepingSQL), one statement at a time in tx.
func (r *MessageRepo) finishBatch(ctx context.Context, tx *gorm.DB, msgs []domain.Message, results []SaveResult, now int64) error {
	stmts, revoke := r.db.bookkeepingSQL(msgs, results, now)
	for i, st := range stmts {
		affected, err := r.db.execTx(ctx, tx, st)
		if err != nil {
			return fmt.Errorf("save bookkeeping (%.40s...): %w", st.query, err)
		}
		if i == revoke && affected > 0 {
			if err := r.readRevoked(tx, msgs, results); err != nil {
				return err
			}
		}
	}
	return nil
}

// readRevoked marks the batch's messages a recall intent revoked.
func (r *MessageRepo) readRevoked(tx *gorm.DB, msgs []domain.Message, results []SaveResult) error {
	st := revokedSQL(savedNormalIDs(msgs, results))
	var ids []string
	if err := tx.Raw(st.query, st.args...).Scan(&ids).Error; err != nil {
		return fmt.Errorf("read revoked messages: %w", err)
	}
	revoked := make(map[string]bool, len(ids))
	for _, id := range ids {
		revoked[id] = true
	}
	markRevoked(msgs, results, revoked)
	return nil
}

func (r *MessageRepo) lookupByClientID(tx *gorm.DB, msgs []domain.Message) (map[domain.ClientMsgKey]domain.Message, error) {
	keys := make([]domain.ClientMsgKey, len(msgs))
	for i := range msgs {
		keys[i] = domain.ClientMsgKey{SenderID: msgs[i].SenderID, ClientMsgID: msgs[i].ClientMsgID}
	}
	return byClientMsgIDs(tx, keys)
}

// identityColumns are what an ACK of a saved message needs, in the order
// ByClientMsgIDs scans them.
const identityColumns = "server_msg_id, client_msg_id, sender_id, conversation_id, seq, send_at, status"

// ByClientMsgIDs returns the saved messages among keys, in one query on
// uk_sender_client_msg; a key with no saved message is absent from the
// map. Only the identity fields are read — ServerMsgID, ClientMsgID,
// SenderID, ConversationID, Seq, SendAt, Status — not the content: it
// answers the accept-time duplicate check, once per send. Errors are the
// database's. The statement is written by hand and run on database/sql
// (identitySQL): through GORM, building it and scanning by reflection cost
// as much CPU as the query's round trip (docs/bench/README.md).
func (r *MessageRepo) ByClientMsgIDs(ctx context.Context, keys []domain.ClientMsgKey) (map[domain.ClientMsgKey]domain.Message, error) {
	out := map[domain.ClientMsgKey]domain.Message{}
	if len(keys) == 0 {
		return out, nil
	}
	sqlDB, err := r.db.Gorm.DB()
	if err != nil {
		return nil, err
	}
	if c := opCounterOf(ctx); c != nil {
		c.DB.Add(1)
		c.DBTrips.Add(1)
	}
	st := identitySQL(keys)
	rows, err := r.db.query(ctx, sqlDB, st)
	if err != nil {
		r.db.noteFailure("query", err)
		return nil, fmt.Errorf("look up %d messages by client_msg_id: %w", len(keys), err)
	}
	defer rows.Close()
	for rows.Next() {
		var row messageRow
		if err := rows.Scan(&row.ServerMsgID, &row.ClientMsgID, &row.SenderID, &row.ConversationID,
			&row.Seq, &row.SendAt, &row.Status); err != nil {
			return nil, fmt.Errorf("look up messages by client_msg_id: %w", err)
		}
		out[domain.ClientMsgKey{SenderID: row.SenderID, ClientMsgID: row.ClientMsgID}] = fromMessageRow(&row)
	}
	if err := rows.Err(); err != nil {
		r.db.noteFailure("query", err)
		return nil, fmt.Errorf("look up %d messages by client_msg_id: %w", len(keys), err)
	}
	return out, nil
}

func byClientMsgIDs(db *gorm.DB, keys []domain.ClientMsgKey) (map[domain.ClientMsgKey]domain.Message, error) {
	pairs := make([][]any, len(keys))
	for i, k := range keys {
		pairs[i] = []any{k.SenderID, k.ClientMsgID}
	}
	var found []messageRow
	if err := db.Where("(sender_id, client_msg_id) IN ?", pairs).Find(&found).Error; err != nil {
		return nil, fmt.Errorf("look up %d messages by client_msg_id: %w", len(keys), err)
	}
	out := make(map[domain.ClientMsgKey]domain.Message, len(found))
	for i := range found {
		out[domain.ClientMsgKey{SenderID: found[i].SenderID, ClientMsgID: found[i].ClientMsgID}] = fromMessageRow(&found[i])
	}
	return out, nil
}

// SaveFailed stores a "failed" placeholder for a seq whose message could not
// be saved (it went to the dead-letter stream), so pulls report the seq as
// unavailable and max_seq moves past it. The placeholder gets a synthetic
// client_msg_id so the sender's retry with the original one is a new message.
// Saving the same placeholder again is a no-op.
func (r *MessageRepo) SaveFailed(ctx context.Context, m domain.Message) error {
	ph := domain.Message{
		ServerMsgID: m.ServerMsgID, ClientMsgID: "failed:" + m.ServerMsgID, ConversationID: m.ConversationID,
		Seq: m.Seq, SenderID: m.SenderID, RecvID: m.RecvID, GroupID: m.GroupID, SessionType: m.SessionType,
		MsgType: m.MsgType, Status: domain.StatusFailed, SendAt: m.SendAt,
	}
	// SeqTaken means the seq already holds another message: nothing to mark.
	_, err := r.SaveBatch(ctx, []domain.Message{ph})
	return err
}

// Range returns the messages of conversationID with begin <= seq <= end in
// ascending seq order, at most limit of them. Seqs with no row are simply
// absent; callers fill placeholders.
func (r *MessageRepo) Range(ctx context.Context, conversationID string, begin, end int64, limit int) ([]domain.Message, error) {
	var rows []messageRow
	err := r.db.Gorm.WithContext(ctx).
		Where("conversation_id = ? AND seq BETWEEN ? AND ?", conversationID, begin, end).
		Order("seq ASC").Limit(limit).Find(&rows).Error
	if err != nil {
		return nil, fmt.Errorf("pull %s [%d,%d]: %w", conversationID, begin, end, err)
	}
	return fromMessageRows(rows), nil
}

// BySeqs returns the stored messages of conversationID among seqs, ascending.
func (r *MessageRepo) BySeqs(ctx context.Context, conversationID string, seqs []int64) ([]domain.Message, error) {
	if len(seqs) == 0 {
		return nil, nil
	}
	var rows []messageRow
	err := r.db.Gorm.WithContext(ctx).Where("conversation_id = ? AND seq IN ?", conversationID, seqs).
		Order("seq ASC").Find(&rows).Error
	if err != nil {
		return nil, fmt.Errorf("pull %s by %d seqs: %w", conversationID, len(seqs), err)
	}
	return fromMessageRows(rows), nil
}

func toMessageRow(m *domain.Message, now int64) messageRow {
	row := messageRow{
		ConversationID: m.ConversationID, Seq: m.Seq, ClientMsgID: m.ClientMsgID, ServerMsgID: m.ServerMsgID,
		SenderID: m.SenderID, RecvID: m.RecvID, GroupID: m.GroupID, SessionType: int(m.SessionType),
		MsgType: int(m.MsgType), ContentImage: m.Content.Image, ContentVideo: m.Content.Video,
		ContentAudio: m.Content.Audio, ContentFile: m.Content.File, Status: statusCode(m.Status),
		SendAt: m.SendAt, CreatedAt: now, UpdatedAt: now,
	}
	if m.Content.Text != "" {
		row.ContentText = &m.Content.Text
	}
	if m.Content.Custom != "" {
		row.ContentCustom = &m.Content.Custom
	}
	if len(m.AtUserIDs) > 0 {
		b, _ := json.Marshal(m.AtUserIDs)
		s := string(b)
		row.AtUserIDs = &s
	}
	row.Extra = encodeExtra(m)
	return row
}

func fromMessageRows(rows []messageRow) []domain.Message {
	out := make([]domain.Message, len(rows))
	for i := range rows {
		out[i] = fromMessageRow(&rows[i])
	}
	return out
}

func fromMessageRow(r *messageRow) domain.Message {
	m := domain.Message{
		ServerMsgID: r.ServerMsgID, ClientMsgID: r.ClientMsgID, ConversationID: r.ConversationID, Seq: r.Seq,
		SenderID: r.SenderID, RecvID: r.RecvID, GroupID: r.GroupID, SessionType: domain.SessionType(r.SessionType),
		MsgType: domain.MsgType(r.MsgType), Status: statusName(r.Status), SendAt: r.SendAt,
		Content: domain.Content{Image: r.ContentImage, Video: r.ContentVideo, Audio: r.ContentAudio, File: r.ContentFile},
	}
	if r.ContentText != nil {
		m.Content.Text = *r.ContentText
	}
	if r.ContentCustom != nil {
		m.Content.Custom = *r.ContentCustom
	}
	if r.AtUserIDs != nil {
		_ = json.Unmarshal([]byte(*r.AtUserIDs), &m.AtUserIDs)
	}
	m.EditedAt, m.EditVersion = r.EditedAt, r.EditVersion
	m.Quote = decodeQuote(r.Extra)
	return m
}

func statusCode(s domain.MessageStatus) int {
	switch s {
	case domain.StatusRevoked:
		return msgStatusRevoked
	case domain.StatusFailed:
		return msgStatusFailed
	case domain.StatusDeleted:
		return msgStatusDeleted
	}
	return msgStatusNormal
}

func statusName(c int) domain.MessageStatus {
	switch c {
	case msgStatusRevoked:
		return domain.StatusRevoked
	case msgStatusFailed:
		return domain.StatusFailed
	case msgStatusDeleted:
		return domain.StatusDeleted
	}
	return domain.StatusNormal
}
