package store

import (
	"context"
	"database/sql/driver"
	"errors"
	"io"
	"strconv"
	"strings"
	"testing"

	gomysql "github.com/go-sql-driver/mysql"
)

// tripConn is a driver connection that records what oneTrip sends and
// answers the multi-statement query with multiErr, or with one affected
// count per statement.
type tripConn struct {
	sent        []string
	multiErr    error
	rollbackErr error
}

type tripResult struct{ affected []int64 }

func (r tripResult) LastInsertId() (int64, error) { return 0, nil }
func (r tripResult) RowsAffected() (int64, error) { return r.affected[len(r.affected)-1], nil }
func (r tripResult) AllRowsAffected() []int64     { return r.affected }
func (r tripResult) AllLastInsertIds() []int64    { return make([]int64, len(r.affected)) }

func (c *tripConn) ExecContext(_ context.Context, query string, _ []driver.NamedValue) (driver.Result, error) {
	c.sent = append(c.sent, query)
	if query == "ROLLBACK" {
		return tripResult{affected: []int64{0}}, c.rollbackErr
	}
	if c.multiErr != nil {
		return nil, c.multiErr
	}
	n := strings.Count(query, ";\n") + 1
	affected := make([]int64, n)
	for i := range affected {
		affected[i] = int64(i) // START TRANSACTION 0, then 1, 2, ...
	}
	return tripResult{affected: affected}, nil
}

// QueryContext answers a compound statement (tripText with block) with
// one row of counts, 1, 2, ... as text, as MariaDB's text protocol does.
func (c *tripConn) QueryContext(_ context.Context, query string, _ []driver.NamedValue) (driver.Rows, error) {
	c.sent = append(c.sent, query)
	if c.multiErr != nil {
		return nil, c.multiErr
	}
	n := strings.Count(query, "= ROW_COUNT()")
	row := make([]driver.Value, n)
	for i := range row {
		row[i] = []byte(strconv.Itoa(i + 1))
	}
	return &countRows{row: row}, nil
}

type countRows struct {
	row  []driver.Value
	read bool
}

func (r *countRows) Columns() []string { return make([]string, len(r.row)) }
func (r *countRows) Close() error      { return nil }
func (r *countRows) Next(dest []driver.Value) error {
	if r.read {
		return io.EOF
	}
	r.read = true
	copy(dest, r.row)
	return nil
}

var _ gomysql.Result = tripResult{}

// TestOneTripCommitsInItsRoundTrip: a batch's transaction is one query,
// START TRANSACTION to COMMIT; a failing statement stops the server before
// the COMMIT, so oneTrip rolls back, and a conflicting row sends the batch
// down the statement-by-statement path.
func TestOneTripCommitsInItsRoundTrip(t *testing.T) {
	ctx := context.Background()
	var got []int64
	c := &tripConn{}
	err := oneTrip(ctx, c, newTrip([]string{"INSERT a", "INSERT b"}, nil, false), func(affected []int64, _ queryFunc) error {
		got = affected
		return nil
	})
	if err != nil || len(c.sent) != 1 {
		t.Fatalf("success: err %v, sent %q; want one query", err, c.sent)
	}
	if q := c.sent[0]; !strings.HasPrefix(q, "START TRANSACTION;\n") || !strings.HasSuffix(q, ";\nCOMMIT") {
		t.Fatalf("the query %q does not carry its own transaction", q)
	}
	if len(got) != 2 || got[0] != 1 || got[1] != 2 {
		t.Fatalf("afterCommit saw affected rows %v, want the two statements' [1 2]", got)
	}

	// Failures end the same way in both forms of the transaction.
	for _, block := range []bool{false, true} {
		dup := &gomysql.MySQLError{Number: errDupEntry, Message: "Duplicate entry"}
		c = &tripConn{multiErr: dup}
		called := false
		err = oneTrip(ctx, c, newTrip([]string{"INSERT a"}, nil, block), func([]int64, queryFunc) error { called = true; return nil })
		if !errors.Is(err, errSlowPath) || called || len(c.sent) != 2 || c.sent[1] != "ROLLBACK" {
			t.Fatalf("conflict: err %v, afterCommit %v, sent %q; want errSlowPath after a ROLLBACK", err, called, c.sent)
		}

		tooLong := &gomysql.MySQLError{Number: 1406, Message: "Data too long"}
		c = &tripConn{multiErr: tooLong}
		err = oneTrip(ctx, c, newTrip([]string{"INSERT a"}, nil, block), func([]int64, queryFunc) error { return nil })
		if !errors.Is(err, tooLong) || errors.Is(err, errSlowPath) || errors.Is(err, driver.ErrBadConn) || len(c.sent) != 2 {
			t.Fatalf("failed statement: err %v, sent %q; want the error itself after a ROLLBACK", err, c.sent)
		}

		c = &tripConn{multiErr: driver.ErrBadConn, rollbackErr: errors.New("broken pipe")}
		err = oneTrip(ctx, c, newTrip([]string{"INSERT a"}, nil, block), func([]int64, queryFunc) error { return nil })
		if !errors.Is(err, driver.ErrBadConn) {
			t.Fatalf("failed rollback: err %v, want driver.ErrBadConn so the connection is not pooled", err)
		}

		c = &tripConn{multiErr: driver.ErrSkip}
		err = oneTrip(ctx, c, newTrip([]string{"INSERT a"}, nil, block), func([]int64, queryFunc) error { return nil })
		if !errors.Is(err, errSlowPath) || len(c.sent) != 1 {
			t.Fatalf("text too large to interpolate: err %v, sent %q; want errSlowPath and nothing more", err, c.sent)
		}
	}
}

// TestOneTripAsOneCompoundStatement: on MariaDB the transaction is one
// BEGIN NOT ATOMIC block whose one row carries every statement's count
// (its failures: TestOneTripCommitsInItsRoundTrip).
func TestOneTripAsOneCompoundStatement(t *testing.T) {
	ctx := context.Background()
	var got []int64
	c := &tripConn{}
	err := oneTrip(ctx, c, newTrip([]string{"INSERT a", "INSERT b", "UPDATE c"}, nil, true), func(affected []int64, _ queryFunc) error {
		got = affected
		return nil
	})
	if err != nil || len(c.sent) != 1 {
		t.Fatalf("success: err %v, sent %q; want one query", err, c.sent)
	}
	want := "BEGIN NOT ATOMIC\nDECLARE a0, a1, a2 BIGINT;\nSTART TRANSACTION;\n" +
		"INSERT a;\nSET a0 = ROW_COUNT();\nINSERT b;\nSET a1 = ROW_COUNT();\nUPDATE c;\nSET a2 = ROW_COUNT();\n" +
		"COMMIT;\nSELECT a0, a1, a2;\nEND"
	if c.sent[0] != want {
		t.Fatalf("sent %q, want %q", c.sent[0], want)
	}
	if len(got) != 3 || got[0] != 1 || got[1] != 2 || got[2] != 3 {
		t.Fatalf("afterCommit saw affected rows %v, want [1 2 3]", got)
	}

}
