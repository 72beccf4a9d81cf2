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
// row was skipped, or the statement is too large to send as text) and
// rolled back; SaveBatch saves it statement by statement.
var errSlowPath = errors.New("save batch: take the statement-by-statement path")

// saveOneTrip is SaveBatch on MySQL/MariaDB for the common case, every row
// new: START TRANSACTION, the INSERT and all of bookkeepingSQL's statements
// as one multi-statement text query (multiStatements and
// interpolateParams, which OpenMySQL sets), then COMMIT — two round trips
// whatever the batch, against two per statement (prepare, execute) and
// BEGIN and COMMIT through GORM before.
// The bookkeeping assumes every row is inserted; when the INSERT's
// affected rows say otherwise the transaction is rolled back and
// errSlowPath returned. A recall intent that revoked a message costs one
// more query. Statements are counted into the context's OpCounter as if
// run one by one; the round trip counts once.
func (r *MessageRepo) saveOneTrip(ctx context.Context, msgs []domain.Message, rows []messageRow, now int64) ([]SaveResult, error) {
	results := make([]SaveResult, len(msgs))
	allSaved(rows, results)
	ins := r.db.insertMessagesSQL(rows)
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
			if len(affected) != len(stmts) {
				return fmt.Errorf("save batch: %d results for %d statements", len(affected), len(stmts))
			}
			if affected[0] != int64(len(rows)) {
				return errSlowPath
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

// queryFunc runs a one-column query in the transaction of oneTrip and
// returns the set of its values.
type queryFunc func(st sqlStmt) (map[string]bool, error)

// oneTrip runs query (many statements) in a transaction on the driver
// connection dc — START TRANSACTION travels with the statements, so the
// whole batch is this query and a COMMIT — hands check every statement's
// affected rows, and commits if check returns nil, otherwise rolls back.
// A connection whose rollback failed is reported bad (driver.ErrBadConn)
// so database/sql discards it rather than pool a connection inside a
// transaction. Text the driver will not interpolate (driver.ErrSkip: too
// large for a packet) is errSlowPath.
func oneTrip(ctx context.Context, dc any, query string, args []driver.NamedValue,
	check func(affected []int64, q queryFunc) error) (err error) {
	exec, ok1 := dc.(driver.ExecerContext)
	read, ok2 := dc.(driver.QueryerContext)
	if !ok1 || !ok2 {
		return fmt.Errorf("save batch: driver connection %T cannot run one round trip: %w", dc, errSlowPath)
	}
	done := false
	defer func() {
		if done {
			return
		}
		// Also after a failed START TRANSACTION: ROLLBACK outside a
		// transaction is a no-op.
		if _, rerr := exec.ExecContext(ctx, "ROLLBACK", nil); rerr != nil {
			err = errors.Join(err, driver.ErrBadConn)
		}
	}()
	res, err := exec.ExecContext(ctx, "START TRANSACTION;\n"+query, args)
	if errors.Is(err, driver.ErrSkip) {
		return errSlowPath
	}
	if err != nil {
		return err
	}
	multi, ok := res.(gomysql.Result)
	if !ok {
		return fmt.Errorf("save batch: driver result %T has no per-statement counts: %w", res, errSlowPath)
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
	if err := check(multi.AllRowsAffected()[1:], q); err != nil {
		return err
	}
	done = true
	if _, err := exec.ExecContext(ctx, "COMMIT", nil); err != nil {
		// The outcome of a failed COMMIT is unknown and so is the
		// connection's state; SaveBatch is idempotent, so the caller
		// retries.
		return errors.Join(err, driver.ErrBadConn)
	}
	return nil
}
