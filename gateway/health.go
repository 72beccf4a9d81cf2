package gateway

import (
	"context"
	"strings"

	"github.com/cloudwego/hertz/pkg/app"

	"github.com/nexo-im/nexo/gateway/wire"
)

// healthz handles GET /healthz: the process is up and serving.
func (s *Server) healthz(ctx context.Context, c *app.RequestContext) {
	WriteOK(c, map[string]string{"status": "ok"})
}

// readyz handles GET /readyz: every ReadyCheck (database, Redis) answers
// within readyTimeout, else 503 server_busy naming the ones that failed
// (their errors are logged, not sent).
func (s *Server) readyz(ctx context.Context, c *app.RequestContext) {
	var failed []string
	for _, rc := range s.deps.Ready {
		pingCtx, cancel := context.WithTimeout(ctx, readyTimeout)
		err := rc.Check(pingCtx)
		cancel()
		if err != nil {
			s.log.WarnContext(ctx, "not ready", "dependency", rc.Name, "err", err)
			failed = append(failed, rc.Name)
		}
	}
	if len(failed) > 0 {
		WriteError(ctx, c, s.log, wire.NewError(wire.ReasonServerBusy, "unreachable: "+strings.Join(failed, ", ")))
		return
	}
	WriteOK(c, map[string]string{"status": "ready"})
}
