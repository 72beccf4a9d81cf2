package main

import (
	"context"

	"github.com/nexo-im/nexo/cmd/app"
)

// migrateCmd applies pending migrations and prints what it applied.
func migrateCmd(ctx context.Context, inv invocation) error {
	return app.Migrate(ctx, inv.cfg, inv.logger, inv.stdout)
}
