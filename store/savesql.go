package store

import (
	"sort"
	"strings"

	"github.com/nexo-im/nexo/domain"
)

// SaveBatch's statements, written by hand: GORM built them by reflection on
// every batch, 19 % of the server's CPU samples at light load (a batch of
// about one message). Each is one multi-row statement whose rows are
// sorted by key, so concurrent batches lock in the same order.

// sqlStmt is one statement and its arguments. Arguments are driver values
// only (string, int64, bool, nil): the one-round-trip path hands them to
// the MySQL driver unconverted.
type sqlStmt struct {
	query string
	args  []any
}

// messageColumns are the columns SaveBatch writes, in toMessageArgs' order.
const messageColumns = "conversation_id, seq, client_msg_id, server_msg_id, sender_id, recv_id, group_id, " +
	"session_type, msg_type, content_text, content_image, content_video, content_audio, content_file, " +
	"content_custom, at_user_ids, status, extra, send_at, created_at, updated_at"

const messageColumnCount = 21

// valuesList writes n tuples of w placeholders: "(?,?),(?,?)".
func valuesList(b *strings.Builder, n, w int) {
	tuple := "(" + strings.Repeat("?,", w-1) + "?)"
	b.Grow(n * (len(tuple) + 1))
	for i := 0; i < n; i++ {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(tuple)
	}
}

// inList writes "(?,?,?)" for n values.
func inList(b *strings.Builder, n int) {
	b.WriteByte('(')
	b.WriteString(strings.Repeat("?,", n-1))
	b.WriteString("?)")
}

// insertValues writes "INSERT INTO table (columns) VALUES" and rows
// placeholder tuples of width.
func insertValues(b *strings.Builder, table, columns string, width, rows int) {
	b.WriteString("INSERT INTO ")
	b.WriteString(table)
	b.WriteString(" (")
	b.WriteString(columns)
	b.WriteString(") VALUES ")
	valuesList(b, rows, width)
}

// insertIgnoringConflicts is "INSERT ... VALUES ..." that skips a row
// conflicting on any unique key: affected rows count inserted rows only
// (MariaDB without RETURNING and clientFoundRows, SQLite's changes()).
func (db *DB) insertIgnoringConflicts(table, columns string, width, rows int, anyKeyColumn string) string {
	var b strings.Builder
	insertValues(&b, table, columns, width, rows)
	if db.Dialect == SQLite {
		b.WriteString(" ON CONFLICT DO NOTHING")
	} else {
		b.WriteString(" ON DUPLICATE KEY UPDATE " + anyKeyColumn + " = " + anyKeyColumn)
	}
	return b.String()
}

// upsertGreatest is "INSERT ... VALUES ..." that, on a conflict on keys,
// raises each of cols to the larger of the stored and the new value.
func (db *DB) upsertGreatest(table, columns string, width, rows int, keys string, cols ...string) string {
	var b strings.Builder
	insertValues(&b, table, columns, width, rows)
	if db.Dialect == SQLite {
		b.WriteString(" ON CONFLICT (" + keys + ") DO UPDATE SET ")
	} else {
		b.WriteString(" ON DUPLICATE KEY UPDATE ")
	}
	for i, c := range cols {
		if i > 0 {
			b.WriteString(", ")
		}
		if db.Dialect == SQLite {
			b.WriteString(c + " = MAX(" + c + ", excluded." + c + ")")
		} else {
			b.WriteString(c + " = GREATEST(" + c + ", VALUES(" + c + "))")
		}
	}
	return b.String()
}

// insertMessagesSQL is the batch's multi-row INSERT, skipping rows that
// conflict on any unique key (resolved afterwards by SaveBatch).
func (db *DB) insertMessagesSQL(rows []messageRow) sqlStmt {
	return sqlStmt{query: db.insertIgnoringConflicts("messages", messageColumns, messageColumnCount, len(rows), "id"),
		args: messageArgs(rows)}
}

// insertNewMessagesSQL is the batch's multi-row INSERT that fails (MySQL
// error 1062) instead of skipping a row that conflicts on a unique key:
// saveOneTrip's INSERT, which must stop its statements before their COMMIT.
func insertNewMessagesSQL(rows []messageRow) sqlStmt {
	var b strings.Builder
	insertValues(&b, "messages", messageColumns, messageColumnCount, len(rows))
	return sqlStmt{query: b.String(), args: messageArgs(rows)}
}

// messageArgs are rows' values in messageColumns' order.
func messageArgs(rows []messageRow) []any {
	args := make([]any, 0, len(rows)*messageColumnCount)
	for i := range rows {
		r := &rows[i]
		args = append(args, r.ConversationID, r.Seq, r.ClientMsgID, r.ServerMsgID, r.SenderID, r.RecvID, r.GroupID,
			int64(r.SessionType), int64(r.MsgType), nullable(r.ContentText), r.ContentImage, r.ContentVideo,
			r.ContentAudio, r.ContentFile, nullable(r.ContentCustom), nullable(r.AtUserIDs), int64(r.Status),
			nullable(r.Extra), r.SendAt, r.CreatedAt, r.UpdatedAt)
	}
	return args
}

// nullable is p's string, or nil (SQL NULL) for a nil p.
func nullable(p *string) any {
	if p == nil {
		return nil
	}
	return *p
}

// bookkeepingSQL is what a save implies once every row's outcome is known,
// in this order (the lock order every batch follows): seq_conversations
// (max_seq over saved and duplicate seqs, latest_send_at), the senders'
// seq_users (read_seq and delivered_seq), both parties' single-chat
// conversations rows (updated_at), the mention rows of stored messages,
// and the recall intents recorded before the save (revokeIntentsSQL).
// revoke is the index of the last statement, or -1 when no message can be
// revoked.
func (db *DB) bookkeepingSQL(msgs []domain.Message, res []SaveResult, now int64) (stmts []sqlStmt, revoke int) {
	type userConv struct{ user, conv string }
	type convRow struct {
		owner, conv, peer string
		updatedAt         int64
	}
	maxSeq := map[string]int64{}
	latest := map[string]int64{}
	senderSeq := map[userConv]int64{}
	convs := map[userConv]convRow{}
	for i := range msgs {
		m := &msgs[i]
		if res[i].Outcome == SeqTaken {
			continue
		}
		maxSeq[m.ConversationID] = max(maxSeq[m.ConversationID], m.Seq)
		if res[i].Outcome != Saved {
			continue
		}
		if m.Status != domain.StatusFailed {
			latest[m.ConversationID] = max(latest[m.ConversationID], m.SendAt)
		}
		k := userConv{m.SenderID, m.ConversationID}
		senderSeq[k] = max(senderSeq[k], m.Seq)
		if m.SessionType == domain.SessionSingle {
			// The later message of the batch wins, as GORM's map did.
			convs[userConv{m.SenderID, m.ConversationID}] = convRow{m.SenderID, m.ConversationID, m.RecvID, m.SendAt}
			convs[userConv{m.RecvID, m.ConversationID}] = convRow{m.RecvID, m.ConversationID, m.SenderID, m.SendAt}
		}
	}
	if len(maxSeq) > 0 {
		ids := make([]string, 0, len(maxSeq))
		for c := range maxSeq {
			ids = append(ids, c)
		}
		sort.Strings(ids)
		args := make([]any, 0, 5*len(ids))
		for _, c := range ids {
			args = append(args, c, maxSeq[c], int64(0), maxSeq[c], latest[c])
		}
		stmts = append(stmts, sqlStmt{query: db.seqConversationsSQL(len(ids)), args: args})
	}
	if len(senderSeq) > 0 {
		keys := make([]userConv, 0, len(senderSeq))
		for k := range senderSeq {
			keys = append(keys, k)
		}
		sort.Slice(keys, func(i, j int) bool {
			return keys[i].user < keys[j].user || keys[i].user == keys[j].user && keys[i].conv < keys[j].conv
		})
		args := make([]any, 0, 6*len(keys))
		for _, k := range keys {
			s := senderSeq[k]
			args = append(args, k.user, k.conv, int64(0), int64(0), s, s)
		}
		stmts = append(stmts, sqlStmt{query: db.seqUsersSQL(len(keys)), args: args})
	}
	if len(convs) > 0 {
		rows := make([]convRow, 0, len(convs))
		for _, c := range convs {
			rows = append(rows, c)
		}
		sort.Slice(rows, func(i, j int) bool {
			return rows[i].owner < rows[j].owner || rows[i].owner == rows[j].owner && rows[i].conv < rows[j].conv
		})
		args := make([]any, 0, 10*len(rows))
		for _, c := range rows {
			args = append(args, c.conv, c.owner, int64(domain.SessionSingle), c.peer, "", int64(0), false,
				now, c.updatedAt, int64(0))
		}
		stmts = append(stmts, sqlStmt{query: db.singleConversationsSQL(len(rows)), args: args})
	}
	if st, ok := db.mentionsSQL(msgs, res); ok {
		stmts = append(stmts, st)
	}
	if st, ok := db.revokeIntentsSQL(msgs, res, now); ok {
		return append(stmts, st), len(stmts)
	}
	return stmts, -1
}

// seqConversationsSQL upserts n seq_conversations rows of (conversation_id,
// max_seq, min_seq, reserved_seq, latest_send_at), raising max_seq and
// latest_send_at.
func (db *DB) seqConversationsSQL(n int) string {
	return db.upsertGreatest("seq_conversations",
		"conversation_id, max_seq, min_seq, reserved_seq, latest_send_at", 5, n,
		"conversation_id", "max_seq", "latest_send_at")
}

// seqUsersSQL upserts n seq_users rows of (user_id, conversation_id,
// min_seq, max_seq, read_seq, delivered_seq), raising the two cursors.
func (db *DB) seqUsersSQL(n int) string {
	return db.upsertGreatest("seq_users",
		"user_id, conversation_id, min_seq, max_seq, read_seq, delivered_seq", 6, n,
		"user_id, conversation_id", "read_seq", "delivered_seq")
}

// singleConversationsSQL upserts n conversations rows of (conversation_id,
// owner_id, conversation_type, peer_user_id, group_id, recv_msg_opt,
// is_pinned, created_at, updated_at, hidden_seq), raising updated_at.
func (db *DB) singleConversationsSQL(n int) string {
	return db.upsertGreatest("conversations",
		"conversation_id, owner_id, conversation_type, peer_user_id, group_id, recv_msg_opt, is_pinned, "+
			"created_at, updated_at, hidden_seq", 10, n,
		"owner_id, conversation_id", "updated_at")
}

// mentionsSQL writes one row per (mentioned user, message) of the stored
// normal messages; rows already there are kept.
func (db *DB) mentionsSQL(msgs []domain.Message, res []SaveResult) (sqlStmt, bool) {
	type key struct {
		user, conv string
		seq        int64
	}
	seen := map[key]bool{}
	var rows []mentionRow
	for i := range msgs {
		m := &msgs[i]
		if res[i].Outcome != Saved || m.Status != domain.StatusNormal {
			continue
		}
		for _, u := range m.AtUserIDs {
			k := key{u, m.ConversationID, m.Seq}
			if u == "" || seen[k] {
				continue
			}
			seen[k] = true
			rows = append(rows, mentionRow{UserID: u, ConversationID: m.ConversationID, Seq: m.Seq, SenderID: m.SenderID})
		}
	}
	if len(rows) == 0 {
		return sqlStmt{}, false
	}
	sort.Slice(rows, func(i, j int) bool {
		a, b := rows[i], rows[j]
		if a.UserID != b.UserID {
			return a.UserID < b.UserID
		}
		if a.ConversationID != b.ConversationID {
			return a.ConversationID < b.ConversationID
		}
		return a.Seq < b.Seq
	})
	args := make([]any, 0, 4*len(rows))
	for _, r := range rows {
		args = append(args, r.UserID, r.ConversationID, r.Seq, r.SenderID)
	}
	return sqlStmt{query: db.insertIgnoringConflicts("message_mentions", "user_id, conversation_id, seq, sender_id",
		4, len(rows), "seq"), args: args}, true
}

// revokeIntentsSQL marks revoked, in one UPDATE, the batch's stored normal
// messages that a recall recorded before the save applies to — the rule of
// RevokeIntent.Applies in SQL: an intent at the message's (conversation,
// seq), from anyone allowed to recall any sender's message, or from the
// sender with send_at >= min_send_at; never a notification. Its affected
// rows say whether any was revoked (then markRevoked reads which).
//
// On MySQL/MariaDB the UPDATE starts from message_revokes, probed by its
// primary key for the batch's (conversation_id, seq) pairs: intents are
// rare, so in the common case it finds none and reads no message. The
// form that reads each of the batch's messages and probes for its intent
// was 8 % of MariaDB's CPU samples in a closed loop, this one 4 %
// (docs/bench/README.md, "What two cores can hold"). SQLite has no
// multi-table UPDATE and keeps that form.
func (db *DB) revokeIntentsSQL(msgs []domain.Message, res []SaveResult, now int64) (sqlStmt, bool) {
	saved := savedNormal(msgs, res)
	if len(saved) == 0 {
		return sqlStmt{}, false
	}
	var b strings.Builder
	args := make([]any, 0, 2*len(saved)+4)
	args = append(args, int64(msgStatusRevoked), now)
	if db.Dialect == SQLite {
		b.WriteString("UPDATE messages SET status = ?, updated_at = ? WHERE server_msg_id IN ")
		inList(&b, len(saved))
		b.WriteString(" AND status = ? AND msg_type < ? AND EXISTS (SELECT 1 FROM message_revokes r" +
			" WHERE r.conversation_id = messages.conversation_id AND r.seq = messages.seq" +
			" AND (r.any_sender <> 0 OR r.revoker_id = messages.sender_id AND messages.send_at >= r.min_send_at))")
		for _, m := range saved {
			args = append(args, m.ServerMsgID)
		}
	} else {
		revokeJoinSQL(&b, len(saved))
		for _, m := range saved {
			args = append(args, m.ConversationID, m.Seq)
		}
	}
	args = append(args, int64(msgStatusNormal), int64(domain.MsgNotificationMin))
	return sqlStmt{query: b.String(), args: args}, true
}

// revokeJoinSQL writes revokeIntentsSQL's MySQL/MariaDB form for n
// (conversation_id, seq) pairs; its arguments are the revoked status, the
// time, the pairs, the normal status and domain.MsgNotificationMin.
func revokeJoinSQL(b *strings.Builder, n int) {
	b.WriteString("UPDATE message_revokes r JOIN messages m ON m.conversation_id = r.conversation_id AND m.seq = r.seq" +
		" SET m.status = ?, m.updated_at = ? WHERE (r.conversation_id, r.seq) IN (")
	valuesList(b, n, 2)
	b.WriteString(") AND m.status = ? AND m.msg_type < ?" +
		" AND (r.any_sender <> 0 OR r.revoker_id = m.sender_id AND m.send_at >= r.min_send_at)")
}

// savedNormal are the batch's messages stored under their own ID and sent
// normal (those a recall can revoke), sorted by conversation and seq.
func savedNormal(msgs []domain.Message, res []SaveResult) []*domain.Message {
	var out []*domain.Message
	for i := range msgs {
		if res[i].Outcome == Saved && msgs[i].Status == domain.StatusNormal {
			out = append(out, &msgs[i])
		}
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i], out[j]
		return a.ConversationID < b.ConversationID || a.ConversationID == b.ConversationID && a.Seq < b.Seq
	})
	return out
}

// savedNormalIDs are the server_msg_ids of savedNormal's messages, in its
// order.
func savedNormalIDs(msgs []domain.Message, res []SaveResult) []string {
	saved := savedNormal(msgs, res)
	ids := make([]string, len(saved))
	for i, m := range saved {
		ids[i] = m.ServerMsgID
	}
	return ids
}

// identitySQL selects identityColumns of the messages with the keys'
// (sender_id, client_msg_id), on uk_sender_client_msg.
func identitySQL(keys []domain.ClientMsgKey) sqlStmt {
	var b strings.Builder
	b.WriteString("SELECT " + identityColumns + " FROM messages WHERE (sender_id, client_msg_id) IN (")
	valuesList(&b, len(keys), 2)
	b.WriteByte(')')
	args := make([]any, 0, 2*len(keys))
	for _, k := range keys {
		args = append(args, k.SenderID, k.ClientMsgID)
	}
	return sqlStmt{query: b.String(), args: args}
}

// revokedSQL selects which of ids are stored revoked.
func revokedSQL(ids []string) sqlStmt {
	var b strings.Builder
	b.WriteString("SELECT server_msg_id FROM messages WHERE server_msg_id IN ")
	inList(&b, len(ids))
	b.WriteString(" AND status = ?")
	args := make([]any, 0, len(ids)+1)
	for _, id := range ids {
		args = append(args, id)
	}
	return sqlStmt{query: b.String(), args: append(args, int64(msgStatusRevoked))}
}

// markRevoked sets Original.Status to revoked for the batch's saved
// messages whose ID is in revoked.
func markRevoked(msgs []domain.Message, res []SaveResult, revoked map[string]bool) {
	for i := range msgs {
		if res[i].Outcome == Saved && revoked[msgs[i].ServerMsgID] {
			res[i].Original.Status = domain.StatusRevoked
		}
	}
}
