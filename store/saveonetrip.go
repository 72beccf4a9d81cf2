package store

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"strings"

	gomysql "github.com/go-sql-driver/mysql"

	"github.com/nexo-im/nexo/domain"
)

// errSlowPath: saveOneTrip could not save the batch in one round trip (a
// row conflicted, or the statement is too large to send as text) and
// rolled back; SaveBatch saves it statement by statement.
var errSlowPath = errors.New("save batch: take the statement-by-statement path")

// saveOneTrip is SaveBatch on MySQL/MariaDB for the common case, every row
// new: START TRANSACTION, a plain INSERT, all of bookkeepingSQL's
// statements and COMMIT as one multi-statement text query
// (multiStatements and interpolateParams, which OpenMySQL sets) — one
// round trip whatever the batch, against two per statement (prepare,
// execute) and BEGIN and COMMIT through GORM before.
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
	ins := insertNewMessagesSQL(rows)
	book, revoke := r.db.bookkeepingSQL(msgs, results, now)
	stmts := append([]sqlStmt{ins}, book...)
	if revoke >= 0 {
		revoke++
	}
	// Sized up front: grown by append, args alone was 18 % of the server's
	// allocated bytes in a closed loop.
	var q strings.Builder
	size, n := 0, 0
	for _, st := range stmts {
		size += len(st.query) + 2
		n += len(st.args)
	}
	q.Grow(size)
	args := make([]driver.NamedValue, 0, n)
	for i, st := range stmts {
		if i > 0 {
			q.WriteString(";\n")
		}
		q.WriteString(st.query)
		for _, a := range st.args {
			args = append(args, driver.NamedValue{Ordinal: len(args) + 1, Value: a})
		}
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
		c.DB.Add(int64(len(stmts)))
		c.DBTrips.Add(1)
	}
	err = conn.Raw(func(dc any) error {
		return oneTrip(ctx, dc, q.String(), args, func(affected []int64, query queryFunc) error {
			// Committed: a surprise here is an error the caller retries,
			// and a retry finds the rows saved (SaveBatch is idempotent).
			if len(affected) != len(stmts) || affected[0] != int64(len(rows)) {
				return fmt.Errorf("save batch: committed with affected rows %v for %d statements and %d rows",
					affected, len(stmts), len(rows))
			}
			if revoke < 0 || affected[revoke] == 0 {
				return nil
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
	case err != nil:
		r.db.noteFailure("raw", err)
		return nil, fmt.Errorf("save batch of %d: %w", len(msgs), err)
	}
	return results, nil
}

// queryFunc runs a one-column query on oneTrip's connection and returns
// the set of its values.
type queryFunc func(st sqlStmt) (map[string]bool, error)

// oneTrip runs query (many statements) as one transaction on the driver
// connection dc — START TRANSACTION and COMMIT travel with the
// statements, so the whole batch is one round trip — then hands
// afterCommit every statement's affected rows. The server stops at the
// first failing statement, before the COMMIT; oneTrip then rolls back and
// returns the error, errSlowPath for a unique-key conflict (the plain
// INSERT's way of saying a row was already there). A connection whose
// rollback failed is reported bad (driver.ErrBadConn) so database/sql
// discards it rather than pool a connection inside a transaction; a
// round trip cut off with the COMMIT's outcome unknown ends there too,
// and the caller's retry finds what was saved. Text the driver will not
// interpolate (driver.ErrSkip: too large for a packet) is errSlowPath.
func oneTrip(ctx context.Context, dc any, query string, args []driver.NamedValue,
	afterCommit func(affected []int64, q queryFunc) error) error {
	exec, ok1 := dc.(driver.ExecerContext)
	read, ok2 := dc.(driver.QueryerContext)
	if !ok1 || !ok2 {
		return fmt.Errorf("save batch: driver connection %T cannot run one round trip: %w", dc, errSlowPath)
	}
	res, err := exec.ExecContext(ctx, "START TRANSACTION;\n"+query+";\nCOMMIT", args)
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
	multi, ok := res.(gomysql.Result)
	if !ok {
		return fmt.Errorf("save batch: driver result %T has no per-statement counts", res)
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
	all := multi.AllRowsAffected()
	if len(all) < 2 {
		return fmt.Errorf("save batch: %d results for a multi-statement transaction", len(all))
	}
	return afterCommit(all[1:len(all)-1], q)
}
