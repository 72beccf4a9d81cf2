package app

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/nexo-im/nexo/configs"
	"github.com/nexo-im/nexo/store"
)

// Migrate applies pending migrations to the configured database (MySQL, or
// the embedded SQLite file) and prints what it applied to stdout.
func Migrate(ctx context.Context, cfg configs.Config, logger *slog.Logger, stdout io.Writer) error {
	db, err := openDatabase(ctx, cfg)
	if err != nil {
		return err
	}
	defer db.Close()
	start := time.Now()
	applied, err := db.Migrate(ctx)
	if err != nil {
		return err
	}
	version, err := db.SchemaVersion(ctx)
	if err != nil {
		return err
	}
	if len(applied) == 0 {
		_, err = fmt.Fprintf(stdout, "schema up to date at version %d (%s)\n", version, db.Dialect)
		return err
	}
	logger.Info("migrated", "applied", applied, "took", time.Since(start))
	_, err = fmt.Fprintf(stdout, "applied %v; schema at version %d (%s)\n", applied, version, db.Dialect)
	return err
}

// openDatabase opens the configured database for a one-off command: MySQL
// when mysql.dsn is set, else the embedded SQLite file.
func openDatabase(ctx context.Context, cfg configs.Config) (*store.DB, error) {
	if cfg.MySQL.DSN != "" {
		return store.OpenMySQL(ctx, cfg.MySQL)
	}
	return store.OpenSQLite(ctx, cfg.SQLite.Path)
}
