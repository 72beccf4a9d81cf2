package app

import (
	"context"
	"fmt"
	"time"

	"github.com/nexo-im/nexo/configs"
	"github.com/nexo-im/nexo/store"
)

// bindDeployment refuses to start when the database and redis.key_prefix
// belong to different deployments, and records them as one at the first
// start (store.BindDeployment; docs/operations.md, "One database, one key
// prefix"). The embedded mode has nothing to bind: its Redis starts empty
// every time and nothing else can reach it.
func (a *App) bindDeployment(ctx context.Context) error {
	if a.embedded {
		return nil
	}
	id, err := store.BindDeployment(ctx, a.db, a.rdb, a.keys)
	if err != nil {
		return err
	}
	a.log.Info("deployment", "database", id.String(), "redis.key_prefix", a.keys.Prefix)
	return nil
}

// CheckDeployment reports for nexo config check whether cfg's database and
// redis.key_prefix belong to each other, reading both and writing neither:
// a sentence, or an error wrapping store.ErrOtherDeployment. It gives up
// after timeout; the embedded mode has nothing to check.
func CheckDeployment(ctx context.Context, cfg configs.Config, timeout time.Duration) (string, error) {
	if cfg.Embedded() {
		return "embedded mode: nothing to check (its Redis starts empty every time)", nil
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	db, err := store.OpenMySQL(ctx, cfg.MySQL)
	if err != nil {
		return "", fmt.Errorf("not checked: %w", err)
	}
	defer db.Close()
	rdb, err := store.OpenRedis(ctx, cfg.Redis, store.NewRedisMetrics(nil, cfg.Redis.Mode))
	if err != nil {
		return "", fmt.Errorf("not checked: %w", err)
	}
	defer rdb.Close()
	return store.CheckDeployment(ctx, db, rdb, store.Keys{Prefix: cfg.Redis.KeyPrefix})
}
