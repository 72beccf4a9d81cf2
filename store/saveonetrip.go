package store

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	gomysql "github.com/go-sql-driver/mysql"

	"github.com/nexo-im/nexo/domain"
)

// errSlowPath: saveOneTrip could not save the batch in one round trip (a
// row conflicted, or the statement is too large to send as text) and
// rolled back; SaveBatch saves it statement by statement.
var errSlowPath = errors.New("save batch: take the statement-by-statement path")

// compoundMaxBatch is the largest batch saveOneTrip sends as a MariaDB
// compound statement: at light load (batches of one or two messages) it
// spares the server a wait per statement, 0.92–0.94× its CPU per message; a
// batch of tens of messages ran slower as one (docs/pipeline.md).
const compoundMaxBatch = 4

// saveOneTrip is SaveBatch on MySQL/MariaDB for the common case, every row
// new: START TRANSACTION, a plain INSERT, all of bookkeepingSQL's
// statements and COMMIT as one multi-statement text query
// (multiStatements and interpolateParams, which OpenMySQL sets) — one
// round trip whatever the batch, against two per statement (prepare,
// execute) and BEGIN and COMMIT through GORM before. On MariaDB a batch
// of up to compoundMaxBatch messages is one compound statement (BEGIN NOT
// ATOMIC, tripText) answered with one row of counts, so the driver waits
// for one result instead of one per statement (docs/pipeline.md); a
// batch of one message that procSaves is a CALL of the save procedure
// (saveproc.go), the same transaction already parsed. A procedure the
// process cannot call (dropped, not allowed) is given up for the
// compound statement.
// The bookkeeping assumes every row is inserted, so the INSERT has no
// conflict clause: a row that conflicts fails it (error 1062), the server
// runs none of the statements after it, COMMIT included, and the
// transaction is rolled back and errSlowPath returned. A recall intent
// that revoked a message costs one more query, after the commit (a
// revoked message stays revoked, so reading it then gives the same
// answer). Statements are counted into the context's OpCounter as if run
// one by one; the round trip counts once.
func (r *MessageRepo) saveOneTrip(ctx context.Context, msgs []domain.Message, rows []messageRow, now int64) ([]SaveResult, error) {
	results := make([]SaveResult, len(msgs))
	allSaved(rows, results)
	proc := r.db.saveProcedure()
	call := proc != "" && len(msgs) == 1 && procSaves(&msgs[0])
	var t trip
	var revoked countsCheck
	if call {
		t, revoked = saveCall(proc, &msgs[0], &rows[0], now)
	} else {
		t, revoked = r.db.statementsTrip(msgs, rows, results, now)
	}
	sqlDB, err := r.db.Gorm.DB()
	if err != nil {
		return nil, err
	}
	conn, err := sqlDB.Conn(ctx)
	if err != nil {
		return nil, fmt.Errorf("save batch of %d: %w", len(msgs), err)
	}
	defer conn.Close()
	if c := opCounterOf(ctx); c != nil {
		c.DB.Add(int64(t.stmts))
		c.DBTrips.Add(1)
	}
	err = conn.Raw(func(dc any) error {
		return oneTrip(ctx, dc, t, func(affected []int64, query queryFunc) error {
			// Committed: a surprise here is an error the caller retries,
			// and a retry finds the rows saved (SaveBatch is idempotent).
			hit, err := revoked(affected)
			if err != nil || !hit {
				return err
			}
			st := revokedSQL(savedNormalIDs(msgs, results))
			ids, err := query(st)
			if err != nil {
				return fmt.Errorf("read revoked messages: %w", err)
			}
			markRevoked(msgs, results, ids)
			return nil
		})
	})
	switch {
	case errors.Is(err, errSlowPath):
		return nil, errSlowPath
	case call && procedureUnusable(err):
		// The compound statement from now on, and this batch statement by
		// statement (nothing of the call ran); counted once, under its op.
		r.db.noteFailure("save_procedure", err)
		r.db.saveProc.Store(&procState{err: fmt.Errorf("calling %s: %w", proc, err)})
		return nil, errSlowPath
	case err != nil:
		r.db.noteFailure("raw", err)
		return nil, fmt.Errorf("save batch of %d: %w", len(msgs), err)
	}
	return results, nil
}

// countsCheck checks a committed trip's counts and reports whether a
// recall intent revoked a message (then the caller reads which).
type countsCheck func(affected []int64) (revoked bool, err error)

// statementsTrip is msgs' INSERT and bookkeepingSQL's statements as one
// trip: on MariaDB a compound statement for up to compoundMaxBatch
// messages, otherwise a multi-statement query.
func (db *DB) statementsTrip(msgs []domain.Message, rows []messageRow, results []SaveResult, now int64) (trip, countsCheck) {
	ins := insertNewMessagesSQL(rows)
	book, revoke := db.bookkeepingSQL(msgs, results, now)
	stmts := append([]sqlStmt{ins}, book...)
	if revoke >= 0 {
		revoke++
	}
	// Sized up front: grown by append, args alone was 18 % of the server's
	// allocated bytes in a closed loop.
	texts := make([]string, len(stmts))
	n := 0
	for _, st := range stmts {
		n += len(st.args)
	}
	args := make([]driver.NamedValue, 0, n)
	for i, st := range stmts {
		texts[i] = st.query
		for _, a := range st.args {
			args = append(args, driver.NamedValue{Ordinal: len(args) + 1, Value: a})
		}
	}
	return newTrip(texts, args, db.MariaDB() && len(msgs) <= compoundMaxBatch), func(affected []int64) (bool, error) {
		if len(affected) != len(stmts) || affected[0] != int64(len(rows)) {
			return false, fmt.Errorf("save batch: committed with affected rows %v for %d statements and %d rows",
				affected, len(stmts), len(rows))
		}
		return revoke >= 0 && affected[revoke] > 0, nil
	}
}

// procSaves reports whether the save procedure's one shape of transaction
// is m's: no mention rows, and a single chat between two users (a chat
// with oneself has one conversations row, not two).
func procSaves(m *domain.Message) bool {
	return len(m.AtUserIDs) == 0 && (m.SessionType != domain.SessionSingle || m.SenderID != m.RecvID)
}

// queryFunc runs a one-column query on oneTrip's connection and returns
// the set of its values.
type queryFunc func(st sqlStmt) (map[string]bool, error)

// oneTrip runs stmts as one transaction on the driver connection dc —
// START TRANSACTION and COMMIT travel with the statements, so the whole
// batch is one round trip — then hands afterCommit every statement's
// affected rows. With block (MariaDB) the transaction is one compound
// statement (tripText) that answers every count in one row, one result
// to read where a multi-statement query sends one per statement, each a
// wait of the driver's. The server stops at the first failing statement,
// before the COMMIT; oneTrip then rolls back and returns the error,
// errSlowPath for a unique-key conflict (the plain INSERT's way of saying
// a row was already there). A connection whose rollback failed is
// reported bad (driver.ErrBadConn) so database/sql discards it rather
// than pool a connection inside a transaction; a round trip cut off with
// the COMMIT's outcome unknown ends there too, and the caller's retry
// finds what was saved. Text the driver will not interpolate
// (driver.ErrSkip: too large for a packet) is errSlowPath.
func oneTrip(ctx context.Context, dc any, t trip, afterCommit func(affected []int64, q queryFunc) error) error {
	exec, ok1 := dc.(driver.ExecerContext)
	read, ok2 := dc.(driver.QueryerContext)
	if !ok1 || !ok2 {
		return fmt.Errorf("save batch: driver connection %T cannot run one round trip: %w", dc, errSlowPath)
	}
	var all []int64
	var err error
	if t.oneRow {
		all, err = blockCounts(ctx, read, t.query, t.args)
	} else {
		var res driver.Result
		res, err = exec.ExecContext(ctx, t.query, t.args)
		if err == nil {
			multi, ok := res.(gomysql.Result)
			if !ok {
				return fmt.Errorf("save batch: driver result %T has no per-statement counts", res)
			}
			if all = multi.AllRowsAffected(); len(all) != t.stmts+2 {
				return fmt.Errorf("save batch: %d results for a transaction of %d statements", len(all), t.stmts)
			}
			all = all[1 : len(all)-1]
		}
	}
	if errors.Is(err, driver.ErrSkip) {
		return errSlowPath // nothing was sent
	}
	if err != nil {
		// Also after a failed START TRANSACTION or a failed COMMIT:
		// ROLLBACK outside a transaction is a no-op.
		if _, rerr := exec.ExecContext(ctx, "ROLLBACK", nil); rerr != nil {
			return errors.Join(err, driver.ErrBadConn)
		}
		if isDuplicate(err) {
			return errSlowPath
		}
		return err
	}
	q := func(st sqlStmt) (map[string]bool, error) {
		named := make([]driver.NamedValue, len(st.args))
		for i, a := range st.args {
			named[i] = driver.NamedValue{Ordinal: i + 1, Value: a}
		}
		rows, err := read.QueryContext(ctx, st.query, named)
		if err != nil {
			return nil, err
		}
		defer rows.Close()
		out := map[string]bool{}
		dest := make([]driver.Value, 1)
		for {
			err := rows.Next(dest)
			if errors.Is(err, io.EOF) {
				return out, nil
			}
			if err != nil {
				return nil, err
			}
			switch v := dest[0].(type) {
			case []byte:
				out[string(v)] = true
			case string:
				out[v] = true
			}
		}
	}
	return afterCommit(all, q)
}

// trip is what oneTrip sends: a multi-statement query whose results carry
// one count per statement between START TRANSACTION's and COMMIT's, or
// (oneRow) a compound statement or a procedure call that answers every
// count in one row.
type trip struct {
	query  string
	args   []driver.NamedValue
	stmts  int
	oneRow bool
}

// newTrip is stmts as one transaction (tripText) with their arguments.
func newTrip(stmts []string, args []driver.NamedValue, block bool) trip {
	return trip{query: tripText(stmts, block), args: args, stmts: len(stmts), oneRow: block}
}

// tripText is stmts as one transaction: a multi-statement query from
// START TRANSACTION to COMMIT, or with block a MariaDB compound statement
// that keeps each statement's ROW_COUNT() and selects them after the
// COMMIT.
func tripText(stmts []string, block bool) string {
	var q strings.Builder
	size := 64
	for _, st := range stmts {
		size += len(st) + 32
	}
	q.Grow(size)
	vars := func() {
		for i := range stmts {
			if i > 0 {
				q.WriteString(", ")
			}
			q.WriteString("a")
			q.WriteString(strconv.Itoa(i))
		}
	}
	if block {
		q.WriteString("BEGIN NOT ATOMIC\nDECLARE ")
		vars()
		q.WriteString(" BIGINT;\n")
	}
	q.WriteString("START TRANSACTION;\n")
	for i, st := range stmts {
		q.WriteString(st)
		q.WriteString(";\n")
		if block {
			q.WriteString("SET a")
			q.WriteString(strconv.Itoa(i))
			q.WriteString(" = ROW_COUNT();\n")
		}
	}
	q.WriteString("COMMIT")
	if block {
		q.WriteString(";\nSELECT ")
		vars()
		q.WriteString(";\nEND")
	}
	return q.String()
}

// blockCounts runs query, a MariaDB compound statement that ends with a
// SELECT of each statement's ROW_COUNT(), and returns those counts: one
// result for the whole batch, where a multi-statement query gets one per
// statement, each a read the driver may have to wait for.
func blockCounts(ctx context.Context, read driver.QueryerContext, query string, args []driver.NamedValue) ([]int64, error) {
	rows, err := read.QueryContext(ctx, query, args)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	dest := make([]driver.Value, len(rows.Columns()))
	if err := rows.Next(dest); err != nil {
		return nil, fmt.Errorf("save batch: reading the statements' counts: %w", err)
	}
	out := make([]int64, len(dest))
	for i, v := range dest {
		switch v := v.(type) {
		case int64:
			out[i] = v
		case []byte:
			n, err := strconv.ParseInt(string(v), 10, 64)
			if err != nil {
				return nil, fmt.Errorf("save batch: count %q: %w", v, err)
			}
			out[i] = n
		default:
			return nil, fmt.Errorf("save batch: count of type %T", v)
		}
	}
	return out, nil
}
