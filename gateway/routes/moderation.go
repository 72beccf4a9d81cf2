package routes

import (
	"log/slog"

	"github.com/nexo-im/nexo/gateway/api"
	"github.com/nexo-im/nexo/gateway/wire"
	"github.com/nexo-im/nexo/services/moderation"
)

// Reports mounts POST /msg/report (authenticated) and the WebSocket
// request 1113, the same call (docs/moderation.md, "Reports"); the
// service counts each against limits.report.
func Reports(r HTTP, w WS, svc *moderation.Reports, maxBody int, log *slog.Logger) {
	r.Route("POST", "/msg/report", api.JSON(maxBody, log, svc.File), true)
	w.Handle(wire.ReqReportMsg, api.Frame(svc.File))
}
