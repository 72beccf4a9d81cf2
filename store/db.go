package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"time"

	gomysql "github.com/go-sql-driver/mysql"
	"github.com/libtnb/sqlite"
	"gorm.io/driver/mysql"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"github.com/nexo-im/nexo/configs"
)

// Dialect names the SQL dialect behind a DB.
type Dialect string

// Supported dialects.
const (
	MySQL  Dialect = "mysql" // MySQL 8 and MariaDB 10.5+
	SQLite Dialect = "sqlite"
)

// DB is an open database with its dialect. Repositories share one DB.
type DB struct {
	Gorm    *gorm.DB
	Dialect Dialect
	// Isolation is the MySQL sessions' isolation level as OpenMySQL set it
	// (readCommitted), for the start-up log; "" on SQLite.
	Isolation string
	// failures, set by CountDBErrors, counts a failed statement that ran
	// outside GORM (SaveBatch's one-round-trip query) under op.
	failures func(op string)
	// stmts keeps prepared statements on SQLite (stmtcache.go); nil on MySQL.
	stmts *stmtCache
	// version is the server's SELECT VERSION() (OpenMySQL); "" on SQLite.
	version string
	// saveProc is the procedure one-message saves call (saveproc.go), set
	// by Migrate on MariaDB; nil before.
	saveProc atomic.Pointer[procState]
}

// OpenMySQL opens MySQL/MariaDB at cfg.DSN and pings it. The DSN should carry
// charset=utf8mb4&parseTime=true&loc=UTC.
func OpenMySQL(ctx context.Context, cfg configs.MySQL) (*DB, error) {
	dsn, err := gomysql.ParseDSN(cfg.DSN)
	if err != nil {
		return nil, fmt.Errorf("open mysql: mysql.dsn: %w", err)
	}
	// SaveBatch reads affected rows as "rows inserted"; clientFoundRows
	// would count a skipped duplicate as one.
	dsn.ClientFoundRows = false
	// Arguments are interpolated client-side (the DSN's charset=utf8mb4 is
	// one the driver escapes safely): a statement with arguments is then
	// one round trip, not a prepare, an execute and a close. SaveBatch
	// sends its statements as one multi-statement query (saveOneTrip),
	// which needs both settings; every statement Nexo sends binds its
	// values as arguments, never by pasting them into the SQL.
	dsn.InterpolateParams = true
	dsn.MultiStatements = true
	// Escaping can double a text, so an interpolated statement may outgrow
	// max_allowed_packet where its prepared form fits, and the server
	// drops a connection that sends too large a packet (a retryable error,
	// retried forever). Knowing the server's limit, the driver declines
	// such a statement instead (driver.ErrSkip: SaveBatch takes its
	// statement-by-statement path, database/sql a prepared statement).
	// A DSN that names maxAllowedPacket keeps it.
	if !strings.Contains(cfg.DSN, "maxAllowedPacket=") {
		dsn.MaxAllowedPacket = 0 // read @@max_allowed_packet at connect
	}
	isolation, err := readCommitted(ctx, dsn)
	if err != nil {
		return nil, fmt.Errorf("open mysql: %w", err)
	}
	g, err := gorm.Open(mysql.New(mysql.Config{
		DSNConfig: dsn,
		DSN:       dsn.FormatDSN(),
		// MariaDB >= 10.5 otherwise gets RETURNING, which reports a swallowed
		// duplicate as an inserted row.
		DisableWithReturning: true,
	}), gormConfig())
	if err != nil {
		return nil, fmt.Errorf("open mysql: %w", err)
	}
	sqlDB, err := g.DB()
	if err != nil {
		return nil, err
	}
	sqlDB.SetMaxOpenConns(cfg.MaxOpenConns)
	sqlDB.SetMaxIdleConns(cfg.MaxIdleConns)
	sqlDB.SetConnMaxLifetime(cfg.ConnMaxLifetime)
	if err := ready(ctx, g, sqlDB, "mysql"); err != nil {
		return nil, err
	}
	var version string
	if err := g.WithContext(ctx).Raw("SELECT VERSION()").Scan(&version).Error; err != nil {
		return nil, fmt.Errorf("open mysql: server version: %w", err)
	}
	return &DB{Gorm: g, Dialect: MySQL, Isolation: isolation, version: version}, nil
}

// MariaDB reports whether the server is MariaDB (SELECT VERSION() at
// OpenMySQL): SaveBatch then sends a small batch as one compound
// statement (BEGIN NOT ATOMIC, which MySQL lacks), and search uses Mroonga.
func (db *DB) MariaDB() bool { return strings.Contains(strings.ToLower(db.version), "mariadb") }

// OpenSQLite opens (creating if needed) the embedded SQLite file at path, in
// WAL mode with immediate transactions: a transaction that reads then writes
// otherwise fails with SQLITE_BUSY under concurrency (see
// shared/LIBRARY-NOTES.md). An in-memory path is refused: every pooled
// connection would get its own empty database.
//
// The database holds password hashes and every message, so only its owner
// may read it: a directory OpenSQLite creates is 0700, and the database file
// and its -wal and -shm files are 0600 (an existing file is tightened to
// 0600). An existing directory keeps the mode its owner gave it.
//
// The driver is modernc.org/sqlite (SQLite compiled to Go: no cgo) behind
// the libtnb/sqlite GORM dialector, which turns on the driver's strict
// pragmas (a bad _pragma fails the open), OFD locks and fdatasync for the
// whole process. It replaced glebarez/sqlite, whose driver is a fork of
// modernc's v1.23 that re-parsed a prepared statement on every run
// (docs/bench/README.md, "The embedded default").
func OpenSQLite(ctx context.Context, path string) (*DB, error) {
	if path == "" || path == ":memory:" {
		return nil, fmt.Errorf("sqlite path %q: a file is required", path)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("create sqlite dir: %w", err)
	}
	// SQLite creates -wal and -shm with the main file's mode, so the main
	// file is created (or tightened) first.
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("create sqlite file: %w", err)
	}
	_ = f.Close()
	if err := restrictFiles(path); err != nil {
		return nil, err
	}
	dsn := "file:" + path + "?_pragma=journal_mode(WAL)&_pragma=busy_timeout(10000)&_pragma=synchronous(NORMAL)&_pragma=foreign_keys(1)&_txlock=immediate"
	g, err := gorm.Open(sqlite.Open(dsn), gormConfig())
	if err != nil {
		return nil, fmt.Errorf("open sqlite %s: %w", path, err)
	}
	sqlDB, err := g.DB()
	if err != nil {
		return nil, err
	}
	// One writer at a time is SQLite's model; a small pool keeps readers
	// concurrent without piling up writers on the busy timeout.
	sqlDB.SetMaxOpenConns(4)
	if err := ready(ctx, g, sqlDB, "sqlite"); err != nil {
		return nil, err
	}
	if err := restrictFiles(path); err != nil {
		_ = sqlDB.Close()
		return nil, err
	}
	stmts, err := newStmtCache(sqlDB)
	if err != nil {
		_ = sqlDB.Close()
		return nil, err
	}
	return &DB{Gorm: g, Dialect: SQLite, stmts: stmts}, nil
}

// ready pings the database behind g (its pool sqlDB) and installs the
// statement counter; on failure it closes the pool and returns the error,
// naming dialect ("mysql", "sqlite").
func ready(ctx context.Context, g *gorm.DB, sqlDB *sql.DB, dialect string) error {
	if err := sqlDB.PingContext(ctx); err != nil {
		_ = sqlDB.Close()
		return fmt.Errorf("ping %s: %w", dialect, err)
	}
	if err := countStatements(g); err != nil {
		_ = sqlDB.Close()
		return fmt.Errorf("open %s: %w", dialect, err)
	}
	return nil
}

// restrictFiles sets the database file and its -wal/-shm files (those that
// exist) to 0600.
func restrictFiles(path string) error {
	for _, p := range []string{path, path + "-wal", path + "-shm"} {
		if err := os.Chmod(p, 0o600); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("sqlite file mode: %w", err)
		}
	}
	return nil
}

func gormConfig() *gorm.Config {
	return &gorm.Config{
		Logger:                 logger.Discard,
		SkipDefaultTransaction: true,
		PrepareStmt:            false,
		NowFunc:                func() time.Time { return time.Now().UTC() },
	}
}

// Ping checks the database is reachable (for /readyz).
func (db *DB) Ping(ctx context.Context) error {
	sqlDB, err := db.Gorm.DB()
	if err != nil {
		return err
	}
	return sqlDB.PingContext(ctx)
}

// Close closes the pool.
func (db *DB) Close() error {
	sqlDB, err := db.Gorm.DB()
	if err != nil {
		return err
	}
	return sqlDB.Close()
}

// nowMillis is the store's clock, Unix milliseconds.
func nowMillis() int64 { return time.Now().UnixMilli() }
