package store

import (
	"context"
	"database/sql"
	"fmt"
	"sync"

	lru "github.com/hashicorp/golang-lru/v2"
	"gorm.io/gorm"
)

// On SQLite, parsing a statement costs more than running it: the embedded
// default's profile spent 17 % of its samples in sqlite3_prepare, because
// the driver prepares a statement anew on every Exec and Query. SaveBatch's
// statements and the duplicate lookup therefore run through prepared
// statements kept per SQL text (docs/bench/README.md, "The embedded
// default"). MySQL does not need it: its statements go as text with the
// arguments interpolated client-side (OpenMySQL), one round trip each.

const (
	// stmtCacheSize bounds the texts kept. Light load, where the parsing
	// matters, repeats a handful of texts (batches of 1–3 messages).
	stmtCacheSize = 128
	// maxCachedArgs leaves large statements unprepared: the parse of a
	// batch of 10 messages or more is shared by as many rows, and under
	// load batch sizes vary, so keeping a compiled program per size would
	// cost memory and evictions for little.
	maxCachedArgs = 9 * messageColumnCount
)

// stmtCache holds statements prepared on a *sql.DB by SQL text. database/sql
// prepares each on a pooled connection the first time that connection runs
// it and keeps it there; the driver (modernc.org/sqlite) keeps its compiled
// program, so running it again binds and steps without parsing.
//
// Preparing on the *sql.DB takes a pooled connection, so it is never done
// while a transaction holds one: with every connection in a transaction
// waiting for another, the pool would deadlock. A transaction runs a text
// it misses unprepared and notes it; prepareMissed prepares the noted
// texts after the transaction has released its connection.
type stmtCache struct {
	db    *sql.DB
	stmts *lru.Cache[string, *sql.Stmt]

	mu     sync.Mutex
	missed map[string]struct{}
}

// newStmtCache returns a cache of prepared statements on db. A statement
// evicted is closed once its in-flight uses end (sql.Stmt.Close).
func newStmtCache(db *sql.DB) (*stmtCache, error) {
	stmts, err := lru.NewWithEvict(stmtCacheSize, func(_ string, s *sql.Stmt) { _ = s.Close() })
	if err != nil {
		return nil, err
	}
	return &stmtCache{db: db, stmts: stmts, missed: map[string]struct{}{}}, nil
}

// cacheable reports whether st is small enough to keep prepared.
func cacheable(st sqlStmt) bool { return len(st.args) <= maxCachedArgs }

// inTx returns the prepared statement for st, or nil when it has none; a
// cacheable miss is noted for prepareMissed. It never takes a connection.
func (c *stmtCache) inTx(st sqlStmt) *sql.Stmt {
	if !cacheable(st) {
		return nil
	}
	if s, ok := c.stmts.Get(st.query); ok {
		return s
	}
	c.mu.Lock()
	if len(c.missed) < stmtCacheSize {
		c.missed[st.query] = struct{}{}
	}
	c.mu.Unlock()
	return nil
}

// prepareMissed prepares the texts inTx noted. Call it holding no
// connection. A text that fails to prepare stays unprepared until a
// transaction misses it again; the statement itself had run.
func (c *stmtCache) prepareMissed(ctx context.Context) {
	c.mu.Lock()
	if len(c.missed) == 0 {
		c.mu.Unlock()
		return
	}
	missed := c.missed
	c.missed = map[string]struct{}{}
	c.mu.Unlock()
	for q := range missed {
		_, _ = c.prepared(ctx, q)
	}
}

// prepared returns the prepared statement for query, preparing it on a
// miss. It takes a pooled connection on a miss: call it holding none.
// Errors are the prepare's.
func (c *stmtCache) prepared(ctx context.Context, query string) (*sql.Stmt, error) {
	if s, ok := c.stmts.Get(query); ok {
		return s, nil
	}
	s, err := c.db.PrepareContext(ctx, query)
	if err != nil {
		return nil, err
	}
	if prev, found, _ := c.stmts.PeekOrAdd(query, s); found {
		// Another caller prepared it meanwhile: keep one.
		_ = s.Close()
		return prev, nil
	}
	return s, nil
}

// execTx runs st in the transaction tx and returns the rows it affected,
// through the statement cache when the DB has one (SQLite) and holds st,
// otherwise through GORM. It counts like a GORM statement: into the
// context's OpCounter, and a failure into nexo_db_errors_total under op
// "raw". Errors are the database's.
func (db *DB) execTx(ctx context.Context, tx *gorm.DB, st sqlStmt) (int64, error) {
	sqlTx, ok := tx.Statement.ConnPool.(*sql.Tx)
	var s *sql.Stmt
	if db.stmts != nil && ok {
		s = db.stmts.inTx(st)
	}
	if s == nil {
		done := tx.Exec(st.query, st.args...)
		return done.RowsAffected, done.Error
	}
	if c := opCounterOf(ctx); c != nil {
		c.DB.Add(1)
		c.DBTrips.Add(1)
	}
	res, err := sqlTx.StmtContext(ctx, s).ExecContext(ctx, st.args...)
	if err != nil {
		db.noteFailure("raw", err)
		return 0, err
	}
	return res.RowsAffected()
}

// query runs st on sqlDB, outside any transaction, through the statement
// cache when the DB has one and st is small enough. The caller must hold
// no connection (a miss prepares on the pool); it counts the statement
// and reports its failures. Errors are the database's.
func (db *DB) query(ctx context.Context, sqlDB *sql.DB, st sqlStmt) (*sql.Rows, error) {
	if db.stmts != nil && cacheable(st) {
		s, err := db.stmts.prepared(ctx, st.query)
		if err != nil {
			return nil, fmt.Errorf("prepare: %w", err)
		}
		rows, err := s.QueryContext(ctx, st.args...)
		if err == nil || err.Error() != errStmtClosed {
			return rows, err
		}
		// Evicted and closed between the lookup and the call: run it as
		// text. (In a transaction Tx.StmtContext re-prepares a closed
		// statement itself.)
	}
	return sqlDB.QueryContext(ctx, st.query, st.args...)
}

// errStmtClosed is database/sql's error for a closed *sql.Stmt, which it
// does not export.
const errStmtClosed = "sql: statement is closed"
