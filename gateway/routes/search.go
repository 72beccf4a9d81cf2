package routes

import (
	"context"
	"log/slog"

	"github.com/cloudwego/hertz/pkg/app"

	"github.com/nexo-im/nexo/gateway/api"
	"github.com/nexo-im/nexo/gateway/auth"
	"github.com/nexo-im/nexo/gateway/wire"
	"github.com/nexo-im/nexo/services/search"
)

// SearchLimiter counts one user's searches, shared by every instance
// (limits.Searches): nil when allowed, else too_many_requests with a
// retry-after.
type SearchLimiter interface {
	AllowSearch(ctx context.Context, userID string) error
}

// Search serves message, user and group search (docs/search.md).
type Search struct {
	svc     *search.Service
	limit   SearchLimiter
	maxBody int
	log     *slog.Logger
}

// NewSearch returns the search routes; limit may be nil (no limit).
func NewSearch(svc *search.Service, limit SearchLimiter, maxBody int, log *slog.Logger) *Search {
	return &Search{svc: svc, limit: limit, maxBody: maxBody, log: log}
}

// Register mounts POST /msg/search, GET /user/search and GET
// /group/search (authenticated) and the WebSocket request 1105.
func (s *Search) Register(r HTTP, w WS) {
	r.Route("POST", "/msg/search", api.JSON(s.maxBody, s.log, s.messages), true)
	r.Route("GET", "/user/search", s.query(func(ctx context.Context, caller string, c *app.RequestContext) (any, error) {
		var limit int
		if err := api.QueryInt(c, "limit", &limit); err != nil {
			return nil, err
		}
		return s.svc.Users(ctx, string(c.Query("keyword")), limit)
	}), true)
	r.Route("GET", "/group/search", s.query(func(ctx context.Context, caller string, c *app.RequestContext) (any, error) {
		var limit int
		if err := api.QueryInt(c, "limit", &limit); err != nil {
			return nil, err
		}
		return s.svc.Groups(ctx, caller, string(c.Query("keyword")), limit)
	}), true)
	w.Handle(wire.ReqSearchMsg, api.Frame(s.messages))
}

// messages is one message search, counted against the caller's limit.
func (s *Search) messages(ctx context.Context, caller string, req search.MsgRequest) (search.MsgResult, error) {
	if err := s.allow(ctx, caller); err != nil {
		return search.MsgResult{}, err
	}
	return s.svc.Messages(ctx, caller, req)
}

// allow counts one search of caller (nothing without a limiter).
func (s *Search) allow(ctx context.Context, caller string) error {
	if s.limit == nil {
		return nil
	}
	return s.limit.AllowSearch(ctx, caller)
}

// query adapts a lookup reading its query parameters to an authenticated
// GET route counted against the caller's search limit.
func (s *Search) query(do func(ctx context.Context, caller string, c *app.RequestContext) (any, error)) app.HandlerFunc {
	return func(ctx context.Context, c *app.RequestContext) {
		claims, _ := auth.ClaimsOf(c)
		if err := s.allow(ctx, claims.UserID); err != nil {
			api.WriteError(ctx, c, s.log, err)
			return
		}
		res, err := do(ctx, claims.UserID, c)
		if err != nil {
			api.WriteError(ctx, c, s.log, err)
			return
		}
		api.WriteOK(c, res)
	}
}

// SearchServerAPI mounts the server API's forms on r (which adds the
// apikey check), not limited: POST /api/msg/search runs as the body's
// acting user (read), with that user's visibility; GET /api/user/search
// and GET /api/group/search (open and approval groups) need no user.
func SearchServerAPI(r HTTP, svc *search.Service, read Acting, log *slog.Logger) {
	r.Route("POST", "/api/msg/search", func(ctx context.Context, c *app.RequestContext) {
		var req search.MsgRequest
		caller, err := read(c, &req)
		if err == nil {
			var res search.MsgResult
			if res, err = svc.Messages(ctx, caller, req); err == nil {
				api.WriteOK(c, res)
				return
			}
		}
		api.WriteError(ctx, c, log, err)
	}, false)
	lookup := func(do func(ctx context.Context, keyword string, limit int) (any, error)) app.HandlerFunc {
		return func(ctx context.Context, c *app.RequestContext) {
			var limit int
			err := api.QueryInt(c, "limit", &limit)
			if err == nil {
				var res any
				if res, err = do(ctx, string(c.Query("keyword")), limit); err == nil {
					api.WriteOK(c, res)
					return
				}
			}
			api.WriteError(ctx, c, log, err)
		}
	}
	r.Route("GET", "/api/user/search", lookup(func(ctx context.Context, keyword string, limit int) (any, error) {
		return svc.Users(ctx, keyword, limit)
	}), false)
	r.Route("GET", "/api/group/search", lookup(func(ctx context.Context, keyword string, limit int) (any, error) {
		return svc.Groups(ctx, "", keyword, limit)
	}), false)
}
