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
	var db *store.DB
	var err error
	if cfg.MySQL.DSN != "" {
		db, err = store.OpenMySQL(ctx, cfg.MySQL)
	} else {
		db, err = store.OpenSQLite(ctx, cfg.SQLite.Path)
	}
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
