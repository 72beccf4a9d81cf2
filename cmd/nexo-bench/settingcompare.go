package main

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/nexo-im/nexo/configs"
)

// compareSettings reads a --compare spec ("key=value,..."). The two-phase
// switches are changed on the running server (SetMode), so for them it
// returns nil. Any other key is a start-time setting (search.enabled,
// save.batch_size, ...) that only a second server can take: it returns
// them as NEXO_ variables. A spec mixing both kinds is a usage error.
func compareSettings(spec string) ([]string, error) {
	var env []string
	switches := 0
	for _, kv := range strings.Split(spec, ",") {
		kv = strings.TrimSpace(kv)
		if kv == "" {
			continue
		}
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return nil, fmt.Errorf("--compare %q: want key=value", kv)
		}
		if strings.HasPrefix(k, "two_phase.") {
			switches++
			continue
		}
		env = append(env, configs.EnvName(k)+"="+v)
	}
	if switches > 0 && len(env) > 0 {
		return nil, fmt.Errorf("--compare %q: two_phase switches and start-time settings cannot be mixed", spec)
	}
	return env, nil
}

// startSettingsServer starts the B side of a --compare of start-time
// settings: a second in-process server on the same database and Redis,
// with its own key prefix and env applied last. Both servers run for the
// whole comparison; runs alternate between them.
func startSettingsServer(ctx context.Context, so serverOptions, env []string, logw io.Writer) (*inProcessServer, error) {
	so.FreshDB = false // the A server uses the database already
	so.Env = append(slices.Clone(so.Env), env...)
	srv, err := startInProcess(ctx, so, logw)
	if err != nil {
		return nil, fmt.Errorf("start the server with %v: %w", env, err)
	}
	return srv, nil
}
