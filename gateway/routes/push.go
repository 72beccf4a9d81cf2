package routes

import (
	"context"
	"log/slog"

	"github.com/cloudwego/hertz/pkg/app"

	"github.com/nexo-im/nexo/gateway/api"
	"github.com/nexo-im/nexo/gateway/auth"
	"github.com/nexo-im/nexo/services/push"
)

// Push serves the built-in push's device routes (docs/push.md).
type Push struct {
	svc     *push.Service
	maxBody int
	log     *slog.Logger
}

// NewPush returns the push routes.
func NewPush(svc *push.Service, maxBody int, log *slog.Logger) *Push {
	return &Push{svc: svc, maxBody: maxBody, log: log}
}

// Register mounts POST /push/devices, GET /push/devices, DELETE
// /push/devices/{id}, POST and GET /push/settings and GET
// /push/vapid_public_key, all authenticated.
func (p *Push) Register(r HTTP) {
	r.Route("POST", "/push/devices", api.JSON(p.maxBody, p.log, p.svc.Register), true)
	r.Route("GET", "/push/devices", p.caller(func(ctx context.Context, userID string, _ *app.RequestContext) (any, error) {
		return p.svc.List(ctx, userID)
	}), true)
	r.Route("DELETE", "/push/devices/:id", p.caller(func(ctx context.Context, userID string, c *app.RequestContext) (any, error) {
		return p.svc.Delete(ctx, userID, push.DeleteRequest{DeviceID: c.Param("id")})
	}), true)
	r.Route("POST", "/push/settings", api.JSON(p.maxBody, p.log, p.svc.SetSettings), true)
	r.Route("GET", "/push/settings", p.caller(func(ctx context.Context, userID string, _ *app.RequestContext) (any, error) {
		return p.svc.Settings(ctx, userID)
	}), true)
	r.Route("GET", "/push/vapid_public_key", p.caller(func(context.Context, string, *app.RequestContext) (any, error) {
		return p.svc.VAPIDPublicKey()
	}), true)
}

// caller adapts an operation of the token's user that reads no body.
func (p *Push) caller(do func(ctx context.Context, userID string, c *app.RequestContext) (any, error)) app.HandlerFunc {
	return func(ctx context.Context, c *app.RequestContext) {
		claims, _ := auth.ClaimsOf(c)
		res, err := do(ctx, claims.UserID, c)
		if err != nil {
			api.WriteError(ctx, c, p.log, err)
			return
		}
		api.WriteOK(c, res)
	}
}
