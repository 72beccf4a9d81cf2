package routes

import (
	"context"
	"encoding/json"
	"log/slog"

	"github.com/cloudwego/hertz/pkg/app"

	"github.com/nexo-im/nexo/gateway/api"
	"github.com/nexo-im/nexo/gateway/auth"
	"github.com/nexo-im/nexo/gateway/wire"
	"github.com/nexo-im/nexo/gateway/ws"
	"github.com/nexo-im/nexo/services/presence"
)

// Presence is the presence service's routes: lookups, typing indicators
// and app state.
type Presence struct {
	lookup   *presence.Service
	realtime *presence.Realtime
	log      *slog.Logger
}

// NewPresence returns the presence routes over lookup and realtime.
func NewPresence(lookup *presence.Service, realtime *presence.Realtime, log *slog.Logger) *Presence {
	return &Presence{lookup: lookup, realtime: realtime, log: log}
}

// Register mounts GET /user/presence (authenticated) and WS 1103 (typing)
// and 1104 (app state).
func (h *Presence) Register(r HTTP, w WS) {
	r.Route("GET", "/user/presence", h.user, true)
	w.Handle(wire.ReqTyping, h.typing)
	w.Handle(wire.ReqAppState, h.appState)
}

// API serves the server API's GET /api/presence?user_ids=...: any user's
// presence.
func (h *Presence) API(ctx context.Context, c *app.RequestContext) {
	ids, err := presence.ParseIDs(queryIDs(c))
	if err != nil {
		api.WriteError(ctx, c, h.log, err)
		return
	}
	list, err := h.lookup.Lookup(ctx, ids)
	if err != nil {
		api.WriteError(ctx, c, h.log, err)
		return
	}
	api.WriteOK(c, presence.ListJSON{Presence: list})
}

// user serves GET /user/presence?user_ids=...: the presence of the users
// who share a conversation with the caller.
func (h *Presence) user(ctx context.Context, c *app.RequestContext) {
	claims, _ := auth.ClaimsOf(c)
	ids, err := presence.ParseIDs(queryIDs(c))
	if err != nil {
		api.WriteError(ctx, c, h.log, err)
		return
	}
	list, err := h.lookup.LookupAs(ctx, claims.UserID, ids)
	if err != nil {
		api.WriteError(ctx, c, h.log, err)
		return
	}
	api.WriteOK(c, presence.ListJSON{Presence: list})
}

// queryIDs collects every user_ids query value.
func queryIDs(c *app.RequestContext) []string {
	var raw []string
	c.QueryArgs().VisitAll(func(k, v []byte) {
		if string(k) == "user_ids" {
			raw = append(raw, string(v))
		}
	})
	return raw
}

// typing is 1103: the sending connection does not get its own indicator.
func (h *Presence) typing(ctx context.Context, c *ws.Conn, data json.RawMessage) (any, error) {
	var req presence.TypingRequest
	if err := api.DecodeJSON(data, len(data), &req); err != nil {
		return nil, err
	}
	return h.realtime.Typing(ctx, c.UserID(), c.ID(), req)
}

// appState is 1104, about the connection it came over.
func (h *Presence) appState(ctx context.Context, c *ws.Conn, data json.RawMessage) (any, error) {
	var req presence.AppStateRequest
	if err := api.DecodeJSON(data, len(data), &req); err != nil {
		return nil, err
	}
	return h.realtime.SetAppState(ctx, c.UserID(), c.ID(), c.PlatformID(), req)
}
