package main

import (
	"context"
	"io"
	"log/slog"

	"github.com/nexo-im/nexo/cmd/app"
	"github.com/nexo-im/nexo/configs"
)

// migrateCmd applies pending migrations and prints what it applied.
func migrateCmd(ctx context.Context, cfg configs.Config, logger *slog.Logger, stdout io.Writer) error {
	return app.Migrate(ctx, cfg, logger, stdout)
}
