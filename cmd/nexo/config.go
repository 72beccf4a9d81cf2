package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/nexo-im/nexo/cmd/app"
	"github.com/nexo-im/nexo/configs"
	"github.com/nexo-im/nexo/store"
)

// deploymentCheckTimeout bounds config check's look at the database and
// Redis.
const deploymentCheckTimeout = 10 * time.Second

// configCheckCmd prints the effective configuration (defaults, file,
// environment) as YAML with secrets masked, after a line saying whether
// the database and redis.key_prefix belong to each other
// (app.CheckDeployment). Reaching it means the configuration validated:
// cli reports every error first, with status 2. Two deployments' database
// and prefix fail it (status 1); a database or Redis out of reach is
// reported and does not.
func configCheckCmd(ctx context.Context, inv invocation) error {
	out, err := inv.cfg.MaskedYAML()
	if err != nil {
		return err
	}
	status, deployErr := app.CheckDeployment(ctx, inv.cfg, deploymentCheckTimeout)
	line := "# deployment: " + status
	switch {
	case errors.Is(deployErr, store.ErrOtherDeployment):
		line = "# deployment: REFUSED: the database and redis.key_prefix belong to different deployments (the error names them); nexo serve would not start"
	case deployErr != nil:
		line = "# deployment: not checked (" + strings.ReplaceAll(deployErr.Error(), "\n", " ") + ")"
		deployErr = nil
	}
	if _, err := fmt.Fprintf(inv.stdout, "# nexo config check: valid; the effective configuration, secrets masked\n%s\n", line); err != nil {
		return err
	}
	for _, w := range inv.cfg.Warnings() {
		if _, err := fmt.Fprintf(inv.stdout, "# WARNING: %s\n", w); err != nil {
			return err
		}
	}
	if _, err = inv.stdout.Write(out); err != nil {
		return err
	}
	return deployErr
}

// switchKeys are the two-phase switches SIGHUP reloads.
var switchKeys = []string{"two_phase.enabled", "two_phase.deliver_before_saved", "two_phase.fail_open"}

// pinnedSwitches lists the two-phase switches set by a NEXO_ variable in
// environ: the environment beats the file at every reload, and a running
// process's environment does not change, so SIGHUP cannot change them.
func pinnedSwitches(environ []string) []string {
	set := map[string]bool{}
	for _, kv := range environ {
		name, _, _ := strings.Cut(kv, "=")
		set[name] = true
	}
	var out []string
	for _, key := range switchKeys {
		if set[configs.EnvName(key)] {
			out = append(out, key)
		}
	}
	return out
}

// warnPinnedSwitches logs one warning per switch that SIGHUP cannot change.
func warnPinnedSwitches(log *slog.Logger, environ []string) {
	for _, key := range pinnedSwitches(environ) {
		log.Warn("two-phase switch set by environment: SIGHUP reloads the file but the environment wins, so this switch is fixed until restart (docs/pipeline.md \"Switches\")",
			"key", key, "variable", configs.EnvName(key))
	}
}

// installRedisLogger routes go-redis's log lines through slog. redis.SetLogger
// is process-wide (a go-redis constraint), so it is set once, here in cmd.
func installRedisLogger(log *slog.Logger) {
	redis.SetLogger(store.NewRedisLogger(log))
}
