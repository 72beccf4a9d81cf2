package main

import (
	"context"
	"log/slog"
	"strings"

	"github.com/redis/go-redis/v9"

	"github.com/nexo-im/nexo/configs"
	"github.com/nexo-im/nexo/store"
)

// configCheckCmd prints the effective configuration (defaults, file,
// environment) as YAML with secrets masked. Reaching it means the
// configuration validated: cli reports every error first, with status 2.
func configCheckCmd(_ context.Context, inv invocation) error {
	out, err := inv.cfg.MaskedYAML()
	if err != nil {
		return err
	}
	if _, err := inv.stdout.Write([]byte("# nexo config check: valid; the effective configuration, secrets masked\n")); err != nil {
		return err
	}
	_, err = inv.stdout.Write(out)
	return err
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
