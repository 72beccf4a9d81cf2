package routes

import (
	"context"
	"io"
	"log/slog"
	"time"

	"github.com/cloudwego/hertz/pkg/app"

	"github.com/nexo-im/nexo/gateway/api"
	"github.com/nexo-im/nexo/gateway/auth"
	"github.com/nexo-im/nexo/gateway/wire"
	"github.com/nexo-im/nexo/services/privacy"
)

// ExportLimiter counts one user's data exports, shared by every instance
// (limits.export): nil when allowed, else too_many_requests with a
// retry-after.
type ExportLimiter interface {
	AllowExport(ctx context.Context, userID string) error
}

// exportTimeout bounds one export stream, so a client that stops reading
// does not hold its goroutine forever.
const exportTimeout = time.Hour

// Privacy is the privacy service's routes (docs/privacy.md): account
// deletion, export, clearing a conversation, retention.
type Privacy struct {
	svc     *privacy.Service
	limit   ExportLimiter
	maxBody int
	log     *slog.Logger
}

// NewPrivacy returns the routes; limit may be nil (no limit).
func NewPrivacy(svc *privacy.Service, limit ExportLimiter, maxBody int, log *slog.Logger) *Privacy {
	return &Privacy{svc: svc, limit: limit, maxBody: maxBody, log: log}
}

// Register mounts POST /user/delete, GET /user/export, POST
// /conversation/clear, POST /conversation/set_retention, GET
// /conversation/retention (all authenticated) and WS 1116 (clear) and 1117
// (set retention).
func (h *Privacy) Register(r HTTP, w WS) {
	r.Route("POST", "/user/delete", h.deleteOwn, true)
	r.Route("GET", "/user/export", h.export, true)
	r.Route("POST", "/conversation/clear", api.JSON(h.maxBody, h.log, h.svc.Clear), true)
	r.Route("POST", "/conversation/set_retention", api.JSON(h.maxBody, h.log, h.svc.SetRetention), true)
	r.Route("GET", "/conversation/retention", h.retention, true)
	w.Handle(wire.ReqClearConversation, api.Frame(h.svc.Clear))
	w.Handle(wire.ReqSetRetention, api.Frame(h.svc.SetRetention))
}

// deleteOwn handles POST /user/delete {password} → what the deletion did;
// the client address counts the password attempt (c.ClientIP, as login).
func (h *Privacy) deleteOwn(ctx context.Context, c *app.RequestContext) {
	claims, _ := auth.ClaimsOf(c)
	var req privacy.DeleteRequest
	if err := api.BindJSON(c, h.maxBody, &req); err != nil {
		api.WriteError(ctx, c, h.log, err)
		return
	}
	res, err := h.svc.DeleteOwn(ctx, c.ClientIP(), claims.UserID, req)
	if err != nil {
		api.WriteError(ctx, c, h.log, err)
		return
	}
	api.WriteOK(c, res)
}

// export handles GET /user/export[?format=json|zip] → the caller's data,
// streamed (privacy.Service.Export, ExportZip), counted against
// limits.export whatever the format; a bad format is refused before it
// counts.
func (h *Privacy) export(ctx context.Context, c *app.RequestContext) {
	claims, _ := auth.ClaimsOf(c)
	format, err := ExportFormat(c)
	if err != nil {
		api.WriteError(ctx, c, h.log, err)
		return
	}
	if h.limit != nil {
		if err := h.limit.AllowExport(ctx, claims.UserID); err != nil {
			api.WriteError(ctx, c, h.log, err)
			return
		}
	}
	StreamExport(ctx, c, h.svc, claims.UserID, format, h.log)
}

// ExportFormat reads the format query parameter of an export: json (the
// default) or zip; anything else is bad_request.
func ExportFormat(c *app.RequestContext) (string, error) {
	return privacy.CheckExportFormat(string(c.Query("format")))
}

// StreamExport answers userID's export in format (privacy.FormatJSON or
// FormatZIP) as a chunked body written while it is read from the database
// and the objects backend (constant memory): application/json, or
// application/zip holding export.json and the media; an unknown user is
// answered as an error before the stream begins. The server API's export
// uses it too.
func StreamExport(ctx context.Context, c *app.RequestContext, svc *privacy.Service, userID, format string, log *slog.Logger) {
	if err := svc.Exportable(ctx, userID); err != nil {
		api.WriteError(ctx, c, log, err)
		return
	}
	write, contentType, ext := svc.Export, "application/json; charset=utf-8", ".json"
	if format == privacy.FormatZIP {
		write, contentType, ext = svc.ExportZip, "application/zip", ".zip"
	}
	pr, pw := io.Pipe()
	// The stream outlives the handler: Hertz reads the pipe after it
	// returns, and closes it if the client goes away, which stops the
	// export.
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), exportTimeout)
	go func() {
		defer cancel()
		err := write(sctx, userID, pw)
		if err != nil {
			log.Warn("export ended early", "user_id", userID, "format", format, "err", err)
		}
		_ = pw.CloseWithError(err)
	}()
	c.Response.Header.Set("Content-Type", contentType)
	c.Response.Header.Set("Content-Disposition", `attachment; filename="nexo-export-`+userID+ext+`"`)
	c.SetBodyStream(pr, -1)
}

// retention handles GET /conversation/retention?conversation_id= →
// {conversation_id, retention_seconds, effective_seconds}.
func (h *Privacy) retention(ctx context.Context, c *app.RequestContext) {
	claims, _ := auth.ClaimsOf(c)
	res, err := h.svc.Retention(ctx, claims.UserID, string(c.Query("conversation_id")))
	if err != nil {
		api.WriteError(ctx, c, h.log, err)
		return
	}
	api.WriteOK(c, res)
}
