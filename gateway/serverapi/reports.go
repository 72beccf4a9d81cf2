package serverapi

import (
	"context"

	"github.com/cloudwego/hertz/pkg/app"

	"github.com/nexo-im/nexo/gateway/api"
	"github.com/nexo-im/nexo/services/moderation"
)

// registerReports mounts GET /api/reports and POST
// /api/reports/{id}/resolve (docs/moderation.md, "Reports"); nothing when
// the report service is not wired.
func (a *API) registerReports(g guarded) {
	if a.d.Reports == nil {
		return
	}
	g.Route("GET", "/api/reports", a.listReports, false)
	g.Route("POST", "/api/reports/:id/resolve", a.resolveReport, false)
}

// listReports handles GET /api/reports?status=&cursor=&limit=: a page of
// reports in filing order, each with the message as it was reported.
func (a *API) listReports(ctx context.Context, c *app.RequestContext) {
	req := moderation.ListRequest{Status: c.Query("status"), Cursor: c.Query("cursor")}
	if err := api.QueryInt(c, "limit", &req.Limit); err != nil {
		a.write(ctx, c, nil, err)
		return
	}
	res, err := a.d.Reports.List(ctx, req)
	a.write(ctx, c, res, err)
}

// resolveReport handles POST /api/reports/{id}/resolve {op_user_id?,
// resolution?}: the report, resolved (a second call answers it unchanged).
func (a *API) resolveReport(ctx context.Context, c *app.RequestContext) {
	var req moderation.ResolveRequest
	if err := api.BindJSON(c, a.d.MaxBody, &req); err != nil {
		a.write(ctx, c, nil, err)
		return
	}
	res, err := a.d.Reports.Resolve(ctx, c.Param("id"), req)
	a.write(ctx, c, res, err)
}
