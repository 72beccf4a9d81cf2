package store

import (
	"context"
	"crypto/sha256"
	"database/sql/driver"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"

	gomysql "github.com/go-sql-driver/mysql"
	"gorm.io/gorm"

	"github.com/nexo-im/nexo/domain"
)

// saveProcPrefix starts the name of the stored procedure that saves a
// one-message batch on MariaDB. The rest of the name is a hash of its
// definition, so a build that changes it installs its own beside the old
// one, which an instance of the previous build keeps calling during a
// rolling upgrade (docs/pipeline.md, "One-message saves as a stored
// procedure").
const saveProcPrefix = "nexo_save_message_"

// procState is what saves know of the save procedure: its name, or ""
// and why there is none (nil: not MariaDB).
type procState struct {
	name string
	err  error
}

// SaveProcedure reports the stored procedure one-message saves call, or
// "" and why none is used: not MariaDB (nil error), its installation
// failed, or a call found it gone or not allowed (the error; saves then
// send the compound statement, which needs no privilege beyond the
// tables').
func (db *DB) SaveProcedure() (string, error) {
	if p := db.saveProc.Load(); p != nil {
		return p.name, p.err
	}
	return "", nil
}

// saveProcedure is the procedure's name, "" when saves do without it.
func (db *DB) saveProcedure() string {
	if p := db.saveProc.Load(); p != nil {
		return p.name
	}
	return ""
}

// installSaveProcedure creates the save procedure unless it is there (a
// query of information_schema, then CREATE PROCEDURE IF NOT EXISTS: safe
// when instances start together) and has saves use it. It runs after the
// migrations, which fix the columns its parameters copy.
func (db *DB) installSaveProcedure(ctx context.Context, g *gorm.DB) error {
	types, err := columnTypes(ctx, g, "messages")
	if err != nil {
		return err
	}
	convTypes, err := columnTypes(ctx, g, "conversations")
	if err != nil {
		return err
	}
	def, err := db.saveProcedureText(types, convTypes)
	if err != nil {
		return err
	}
	sum := sha256.Sum256([]byte(def))
	name := saveProcPrefix + hex.EncodeToString(sum[:6])
	var n int64
	err = g.WithContext(ctx).Raw("SELECT COUNT(*) FROM information_schema.ROUTINES"+
		" WHERE ROUTINE_SCHEMA = DATABASE() AND ROUTINE_TYPE = 'PROCEDURE' AND ROUTINE_NAME = ?", name).Scan(&n).Error
	if err != nil {
		return fmt.Errorf("look for the save procedure: %w", err)
	}
	if n == 0 {
		if err := g.WithContext(ctx).Exec("CREATE PROCEDURE IF NOT EXISTS " + name + def).Error; err != nil {
			return fmt.Errorf("create the save procedure %s: %w", name, err)
		}
	}
	db.saveProc.Store(&procState{name: name})
	return nil
}

// columnTypes maps table's columns to their types as a parameter declares
// them ("varchar(64) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin"): a
// parameter typed like its column stores exactly what the column would,
// whatever the database's default character set.
func columnTypes(ctx context.Context, g *gorm.DB, table string) (map[string]string, error) {
	var cols []struct {
		Name    string  `gorm:"column:col_name"`
		Type    string  `gorm:"column:col_type"`
		Charset *string `gorm:"column:col_charset"`
		Collate *string `gorm:"column:col_collation"`
	}
	err := g.WithContext(ctx).Raw("SELECT COLUMN_NAME AS col_name, COLUMN_TYPE AS col_type, CHARACTER_SET_NAME AS col_charset,"+
		" COLLATION_NAME AS col_collation FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = ?",
		table).Scan(&cols).Error
	if err != nil {
		return nil, fmt.Errorf("read the columns of %s: %w", table, err)
	}
	out := make(map[string]string, len(cols))
	for _, c := range cols {
		t := c.Type
		if c.Charset != nil && c.Collate != nil {
			t += " CHARACTER SET " + *c.Charset + " COLLATE " + *c.Collate
		}
		out[c.Name] = t
	}
	return out, nil
}

// saveProcedureText is the procedure's definition after its name: the
// transaction saveOneTrip sends for a batch of one message without
// mentions, from the same statement texts (bookkeepingSQL's), parameters
// in their placeholders' stead. It answers one row of each statement's
// affected rows, as the compound statement does: the INSERT, seq_conversations,
// seq_users, the conversations of a single chat (0 for a group, whose
// p_owner1 is ”), and the recall intents (0 unless p_revocable and an
// intent is recorded for the message: the intent lookup is a primary-key
// probe, the UPDATE only runs when it finds one).
func (db *DB) saveProcedureText(types, convTypes map[string]string) (string, error) {
	var params strings.Builder
	params.WriteString(" (")
	cols := strings.Split(messageColumns, ", ")
	msgParams := make([]string, len(cols))
	for i, c := range cols {
		t, ok := types[c]
		if !ok {
			return "", fmt.Errorf("save procedure: messages has no column %s", c)
		}
		msgParams[i] = "p_" + c
		fmt.Fprintf(&params, "IN p_%s %s, ", c, t)
	}
	owner, ok1 := convTypes["owner_id"]
	peer, ok2 := convTypes["peer_user_id"]
	if !ok1 || !ok2 {
		return "", errors.New("save procedure: conversations has no owner_id or peer_user_id")
	}
	fmt.Fprintf(&params, "IN p_latest_send_at BIGINT, IN p_owner1 %s, IN p_peer1 %s, IN p_owner2 %s, IN p_peer2 %s,"+
		" IN p_now BIGINT, IN p_revocable BOOLEAN)", owner, peer, owner, peer)

	var ins strings.Builder
	insertValues(&ins, "messages", messageColumns, messageColumnCount, 1)
	var rev strings.Builder
	revokeJoinSQL(&rev, 1)
	single := fmt.Sprint(domain.SessionSingle)
	conv := func(owner, peer string) []string {
		return []string{"p_conversation_id", owner, single, peer, "''", "0", "0", "p_now", "p_send_at", "0"}
	}
	var b strings.Builder
	b.WriteString(params.String())
	b.WriteString("\nMODIFIES SQL DATA SQL SECURITY INVOKER\nBEGIN\nDECLARE a0, a1, a2, a3, a4 BIGINT DEFAULT 0;\nSTART TRANSACTION;\n")
	b.WriteString(bind(ins.String(), msgParams...))
	b.WriteString(";\nSET a0 = ROW_COUNT();\n")
	b.WriteString(bind(db.seqConversationsSQL(1), "p_conversation_id", "p_seq", "0", "p_seq", "p_latest_send_at"))
	b.WriteString(";\nSET a1 = ROW_COUNT();\n")
	b.WriteString(bind(db.seqUsersSQL(1), "p_sender_id", "p_conversation_id", "0", "0", "p_seq", "p_seq"))
	b.WriteString(";\nSET a2 = ROW_COUNT();\nIF p_owner1 <> '' THEN\n")
	b.WriteString(bind(db.singleConversationsSQL(2), append(conv("p_owner1", "p_peer1"), conv("p_owner2", "p_peer2")...)...))
	b.WriteString(";\nSET a3 = ROW_COUNT();\nEND IF;\n")
	b.WriteString("IF p_revocable THEN\nIF EXISTS (SELECT 1 FROM message_revokes WHERE conversation_id = p_conversation_id AND seq = p_seq) THEN\n")
	b.WriteString(bind(rev.String(), fmt.Sprint(msgStatusRevoked), "p_now", "p_conversation_id", "p_seq",
		fmt.Sprint(msgStatusNormal), fmt.Sprint(domain.MsgNotificationMin)))
	b.WriteString(";\nSET a4 = ROW_COUNT();\nEND IF;\nEND IF;\nCOMMIT;\nSELECT a0, a1, a2, a3, a4;\nEND")
	return b.String(), nil
}

// bind replaces query's placeholders, in order, with exprs; it panics on a
// count that does not match (a fault of this file's statements, found by
// every test that installs the procedure).
func bind(query string, exprs ...string) string {
	parts := strings.Split(query, "?")
	if len(parts) != len(exprs)+1 {
		panic(fmt.Sprintf("save procedure: %d expressions for %d placeholders in %q", len(exprs), len(parts)-1, query))
	}
	var b strings.Builder
	for i, p := range parts {
		b.WriteString(p)
		if i < len(exprs) {
			b.WriteString(exprs[i])
		}
	}
	return b.String()
}

// saveCall is the round trip that saves m (stored as row) by calling the
// procedure name, and the check of its counts (saveProcedureText's row of
// five). Its statements are counted as the compound statement's are.
func saveCall(name string, m *domain.Message, row *messageRow, now int64) (trip, countsCheck) {
	args := messageArgs([]messageRow{*row})
	latest := int64(0)
	if m.Status != domain.StatusFailed {
		latest = m.SendAt
	}
	var owner1, peer1, owner2, peer2 string
	stmts := 3
	if m.SessionType == domain.SessionSingle {
		// Rows in the order bookkeepingSQL sorts them (by owner), which
		// every batch locks in.
		owner1, peer1, owner2, peer2 = m.SenderID, m.RecvID, m.RecvID, m.SenderID
		if owner2 < owner1 {
			owner1, peer1, owner2, peer2 = owner2, peer2, owner1, peer1
		}
		stmts++
	}
	revocable := m.Status == domain.StatusNormal
	if revocable {
		stmts++
	}
	args = append(args, latest, owner1, peer1, owner2, peer2, now, revocable)
	named := make([]driver.NamedValue, len(args))
	for i, a := range args {
		named[i] = driver.NamedValue{Ordinal: i + 1, Value: a}
	}
	t := trip{query: "CALL " + name + "(" + strings.TrimSuffix(strings.Repeat("?,", len(args)), ",") + ")",
		args: named, stmts: stmts, oneRow: true}
	return t, func(a []int64) (bool, error) {
		if len(a) != 5 || a[0] != 1 {
			return false, fmt.Errorf("save batch: %s committed with affected rows %v", name, a)
		}
		return a[4] > 0, nil
	}
}

// procedureUnusable reports the errors of a call that cannot run the
// procedure at all, before any statement of it: it does not exist (1305:
// dropped behind this process's back), the user may not execute it (1370:
// installed by another user, e.g. migrations run as an administrator), or
// it takes other arguments (1318).
func procedureUnusable(err error) bool {
	var me *gomysql.MySQLError
	return errors.As(err, &me) && (me.Number == 1305 || me.Number == 1370 || me.Number == 1318)
}
