package app

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/nexo-im/nexo/configs"
	"github.com/nexo-im/nexo/services/search"
	"github.com/nexo-im/nexo/store"
)

// Reindex fills the configured database's search table from its stored
// messages sent at or after since (Unix ms, 0 = all), batch messages per
// step, resuming an interrupted run (search.Reindexer). It creates the
// search table if missing, as the server does at start, so it also fills
// the table of a new backend. The schema must be migrated (nexo migrate).
// progress may be nil.
func Reindex(ctx context.Context, cfg configs.Config, logger *slog.Logger, since int64, batch int,
	progress search.ReindexProgress) (store.SearchBackend, search.ReindexResult, error) {
	db, err := openDatabase(ctx, cfg)
	if err != nil {
		return "", search.ReindexResult{}, err
	}
	defer db.Close()
	version, err := db.SchemaVersion(ctx)
	if err != nil {
		return "", search.ReindexResult{}, err
	}
	if version < store.LatestSchemaVersion() {
		return "", search.ReindexResult{}, fmt.Errorf("schema at version %d, this build needs %d: run nexo migrate first",
			version, store.LatestSchemaVersion())
	}
	if !cfg.Search.Enabled {
		logger.Warn("search.enabled is false: the index is filled, but no server searches it until search is enabled")
	}
	repo, err := store.NewSearchRepo(ctx, db)
	if err != nil {
		return "", search.ReindexResult{}, err
	}
	res, err := search.NewReindexer(repo, batch).Run(ctx, since, progress)
	return repo.Backend(), res, err
}
