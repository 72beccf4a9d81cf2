package store

import (
	"context"
	"errors"
	"fmt"
)

// SearchBackend names the full-text engine behind the message_search table.
type SearchBackend string

// The search backends, one per database (docs/search.md).
const (
	// SearchFTS5 is SQLite's FTS5 with the trigram tokenizer (embedded mode).
	SearchFTS5 SearchBackend = "sqlite-fts5-trigram"
	// SearchMroonga is MariaDB with the Mroonga storage engine (a bigram
	// tokenizer, so Chinese and Japanese need no word splitting).
	SearchMroonga SearchBackend = "mariadb-mroonga"
	// SearchNgram is MySQL 8's InnoDB FULLTEXT WITH PARSER ngram.
	SearchNgram SearchBackend = "mysql-ngram"
)

// ErrMroongaMissing is returned by NewSearchRepo on a MariaDB server
// without the Mroonga engine.
var ErrMroongaMissing = errors.New("search on MariaDB needs the Mroonga storage engine: " +
	"install the mariadb-plugin-mroonga package, run INSTALL SONAME 'ha_mroonga' as root, " +
	"or set search.enabled: false (docs/search.md)")

// The message_search table is not one of the numbered migrations: its DDL
// depends on the engine found at start-up, and only a server with search
// enabled needs it. Every statement is idempotent.
var searchDDL = map[SearchBackend][]string{
	SearchFTS5: {
		`CREATE TABLE IF NOT EXISTS message_search (
			id INTEGER PRIMARY KEY,
			conversation_id TEXT NOT NULL, seq INTEGER NOT NULL,
			session_type INTEGER NOT NULL, sender_id TEXT NOT NULL, recv_id TEXT NOT NULL DEFAULT '',
			group_id TEXT NOT NULL DEFAULT '', msg_type INTEGER NOT NULL, send_at INTEGER NOT NULL,
			field TEXT NOT NULL DEFAULT '', body TEXT NOT NULL,
			UNIQUE (conversation_id, seq))`,
		`CREATE INDEX IF NOT EXISTS idx_message_search_send_at ON message_search (send_at)`,
		`CREATE VIRTUAL TABLE IF NOT EXISTS message_search_fts USING fts5(body,
			content='message_search', content_rowid='id', tokenize='trigram')`,
		`CREATE TRIGGER IF NOT EXISTS message_search_ai AFTER INSERT ON message_search BEGIN
			INSERT INTO message_search_fts (rowid, body) VALUES (new.id, new.body); END`,
		`CREATE TRIGGER IF NOT EXISTS message_search_ad AFTER DELETE ON message_search BEGIN
			INSERT INTO message_search_fts (message_search_fts, rowid, body) VALUES ('delete', old.id, old.body); END`,
		searchStateDDL,
	},
	// Mroonga's storage mode: the table is Groonga's; TokenBigramSplitSymbolAlphaDigit
	// indexes every two characters (CJK included), NormalizerAuto folds
	// case and width.
	SearchMroonga: {
		`CREATE TABLE IF NOT EXISTS message_search (` + mysqlSearchColumns + `
			FULLTEXT INDEX ft_body (body) COMMENT 'tokenizer "TokenBigramSplitSymbolAlphaDigit", normalizer "NormalizerAuto"'
		) ENGINE=Mroonga DEFAULT CHARSET=utf8mb4`,
		searchStateDDL,
	},
	SearchNgram: {
		`CREATE TABLE IF NOT EXISTS message_search (` + mysqlSearchColumns + `
			FULLTEXT KEY ft_body (body) WITH PARSER ngram
		) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4`,
		searchStateDDL,
	},
}

// mysqlSearchColumns are message_search's columns and keys on MariaDB and
// MySQL; each backend adds its full-text index and engine.
const mysqlSearchColumns = `
			conversation_id VARCHAR(256) NOT NULL, seq BIGINT NOT NULL,
			session_type INT NOT NULL, sender_id VARCHAR(64) NOT NULL, recv_id VARCHAR(64) NOT NULL DEFAULT '',
			group_id VARCHAR(64) NOT NULL DEFAULT '', msg_type INT NOT NULL, send_at BIGINT NOT NULL,
			field VARCHAR(16) NOT NULL DEFAULT '', body TEXT NOT NULL,
			PRIMARY KEY (conversation_id, seq),
			KEY idx_send_at (send_at),`

// searchStateDDL keeps the reindex command's progress (a message id per
// run name), so an interrupted run resumes where it stopped.
const searchStateDDL = `CREATE TABLE IF NOT EXISTS search_state (
	name VARCHAR(64) NOT NULL PRIMARY KEY, after_id BIGINT NOT NULL DEFAULT 0, since BIGINT NOT NULL DEFAULT 0)`

// detectSearchBackend picks the backend of db: FTS5 on SQLite, Mroonga on
// MariaDB (ErrMroongaMissing without it), ngram on MySQL.
func detectSearchBackend(ctx context.Context, db *DB) (SearchBackend, error) {
	if db.Dialect == SQLite {
		return SearchFTS5, nil
	}
	if !db.MariaDB() {
		return SearchNgram, nil
	}
	var n int64
	err := db.Gorm.WithContext(ctx).Raw(`SELECT COUNT(*) FROM information_schema.ENGINES
		WHERE ENGINE = 'Mroonga' AND SUPPORT IN ('YES', 'DEFAULT')`).Scan(&n).Error
	if err != nil {
		return "", fmt.Errorf("search: list storage engines: %w", err)
	}
	if n == 0 {
		return "", fmt.Errorf("MariaDB %s: %w", db.version, ErrMroongaMissing)
	}
	return SearchMroonga, nil
}

// ensureSearchSchema creates the backend's tables if missing.
func ensureSearchSchema(ctx context.Context, db *DB, b SearchBackend) error {
	for _, stmt := range searchDDL[b] {
		if err := db.Gorm.WithContext(ctx).Exec(stmt).Error; err != nil {
			return fmt.Errorf("search: create tables (%s): %w", b, err)
		}
	}
	return nil
}
