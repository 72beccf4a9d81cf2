package gateway

import (
	"context"
	"strings"

	"github.com/cloudwego/hertz/pkg/app"

	"github.com/nexo-im/nexo/gateway/api"
	"github.com/nexo-im/nexo/gateway/wire"
)

// healthz handles GET /healthz: the process is up and serving.
func (s *Server) healthz(ctx context.Context, c *app.RequestContext) {
	api.WriteOK(c, map[string]string{"status": "ok"})
}

// readyz handles GET /readyz: every ReadyCheck (database, Redis) answers
// within readyTimeout, else 503 server_busy naming the ones that failed
// (their errors are logged, not sent). From the moment shutdown begins
// (SIGTERM) it answers 503 server_busy "draining" without checking, so a
// load balancer stops sending new connections at once.
// When all answer but a Degraded
// check fails it is 200 {"status":"degraded","degraded":["<name>: <why>"]}
// (the why is Nexo's own text, e.g. Redis memory use), else
// {"status":"ready"}.
func (s *Server) readyz(ctx context.Context, c *app.RequestContext) {
	if s.Draining() {
		api.WriteError(ctx, c, s.log, wire.NewError(wire.ReasonServerBusy, "draining: this instance is shutting down"))
		return
	}
	var failed []string
	for _, f := range failing(ctx, s.deps.Ready) {
		s.log.WarnContext(ctx, "not ready", "dependency", f.name, "err", f.err)
		failed = append(failed, f.name)
	}
	if len(failed) > 0 {
		api.WriteError(ctx, c, s.log, wire.NewError(wire.ReasonServerBusy, "unreachable: "+strings.Join(failed, ", ")))
		return
	}
	// Degraded: serving, but an operator must act (Redis near its
	// maxmemory). Still 200: every instance shares the dependency, so taking
	// this one out of a load balancer would help nothing.
	var degraded []string
	for _, f := range failing(ctx, s.deps.Degraded) {
		s.log.WarnContext(ctx, "degraded", "check", f.name, "err", f.err)
		degraded = append(degraded, f.name+": "+f.err.Error())
	}
	if len(degraded) > 0 {
		api.WriteOK(c, map[string]any{"status": "degraded", "degraded": degraded})
		return
	}
	api.WriteOK(c, map[string]string{"status": "ready"})
}

// checkFailure is a check that failed and why.
type checkFailure struct {
	name string
	err  error
}

// failing runs checks one after the other, each within readyTimeout, and
// returns those that failed, in order.
func failing(ctx context.Context, checks []ReadyCheck) []checkFailure {
	var out []checkFailure
	for _, rc := range checks {
		checkCtx, cancel := context.WithTimeout(ctx, readyTimeout)
		err := rc.Check(checkCtx)
		cancel()
		if err != nil {
			out = append(out, checkFailure{rc.Name, err})
		}
	}
	return out
}
