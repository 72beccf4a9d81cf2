package routes

import (
	"cmp"
	"context"
	"log/slog"

	"github.com/cloudwego/hertz/pkg/app"

	"github.com/nexo-im/nexo/gateway/api"
	"github.com/nexo-im/nexo/gateway/auth"
	"github.com/nexo-im/nexo/gateway/wire"
	"github.com/nexo-im/nexo/services/actions"
)

// Actions is the message actions' routes (docs/actions.md): edit, edit
// history, delete, reactions, read by.
type Actions struct {
	svc     *actions.Service
	maxBody int
	log     *slog.Logger
}

// NewActions returns the actions routes; maxBody is http.max_body_bytes.
func NewActions(svc *actions.Service, maxBody int, log *slog.Logger) *Actions {
	return &Actions{svc: svc, maxBody: maxBody, log: log}
}

// Register mounts POST /msg/edit, GET /msg/edits, POST /msg/delete, POST
// /msg/reaction, GET /msg/read_by (all authenticated) and WS 1106–1110.
func (h *Actions) Register(r HTTP, w WS) {
	r.Route("POST", "/msg/edit", api.JSON(h.maxBody, h.log, h.svc.Edit), true)
	r.Route("GET", "/msg/edits", h.edits, true)
	r.Route("POST", "/msg/delete", api.JSON(h.maxBody, h.log, h.svc.Delete), true)
	r.Route("POST", "/msg/reaction", api.JSON(h.maxBody, h.log, h.svc.React), true)
	r.Route("GET", "/msg/read_by", h.readBy, true)
	w.Handle(wire.ReqEditMsg, api.Frame(h.svc.Edit))
	w.Handle(wire.ReqMsgEdits, api.Frame(h.svc.Edits))
	w.Handle(wire.ReqDeleteMsg, api.Frame(h.svc.Delete))
	w.Handle(wire.ReqReactMsg, api.Frame(h.svc.React))
	w.Handle(wire.ReqMsgReadBy, api.Frame(h.svc.ReadBy))
}

// edits serves GET /msg/edits?conversation_id=&seq=.
func (h *Actions) edits(ctx context.Context, c *app.RequestContext) {
	claims, _ := auth.ClaimsOf(c)
	req := actions.EditsRequest{ConversationID: c.Query("conversation_id")}
	if err := api.QueryInt(c, "seq", &req.Seq); err != nil {
		api.WriteError(ctx, c, h.log, err)
		return
	}
	res, err := h.svc.Edits(ctx, claims.UserID, req)
	if err != nil {
		api.WriteError(ctx, c, h.log, err)
		return
	}
	api.WriteOK(c, res)
}

// readBy serves GET /msg/read_by?conversation_id=&seq=&cursor=&limit=.
func (h *Actions) readBy(ctx context.Context, c *app.RequestContext) {
	claims, _ := auth.ClaimsOf(c)
	req := actions.ReadByRequest{ConversationID: c.Query("conversation_id"), Cursor: c.Query("cursor")}
	if err := cmp.Or(api.QueryInt(c, "seq", &req.Seq), api.QueryInt(c, "limit", &req.Limit)); err != nil {
		api.WriteError(ctx, c, h.log, err)
		return
	}
	res, err := h.svc.ReadBy(ctx, claims.UserID, req)
	if err != nil {
		api.WriteError(ctx, c, h.log, err)
		return
	}
	api.WriteOK(c, res)
}
