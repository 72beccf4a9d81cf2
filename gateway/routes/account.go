package routes

import (
	"context"
	"log/slog"

	"github.com/cloudwego/hertz/pkg/app"

	"github.com/nexo-im/nexo/gateway/api"
	"github.com/nexo-im/nexo/gateway/auth"
	"github.com/nexo-im/nexo/services/account"
)

// Account registers the user and auth routes of svc on r: registration,
// login, refresh, logout, password change, the caller's profile and
// blocks.
// maxBody is http.max_body_bytes. The client address the login and
// registration limits count is c.ClientIP(): the gateway sets it to the
// TCP peer, or to what trusted proxies forwarded (http.trusted_proxies).
func Account(r HTTP, svc *account.Service, maxBody int, log *slog.Logger) {
	h := accountRoutes{svc: svc, maxBody: maxBody, log: log}
	r.Route("POST", "/user/register", h.register, false)
	r.Route("GET", "/user/info", h.info, true)
	r.Route("PUT", "/user/update", api.JSON(maxBody, log, svc.Update), true)
	r.Route("POST", "/auth/login", withBody(h, clientIP, svc.Login), false)
	r.Route("POST", "/auth/refresh", h.refresh, true)
	r.Route("POST", "/auth/logout", h.logout, true)
	r.Route("POST", "/auth/logout_all", h.logoutAll, true)
	r.Route("POST", "/user/password", withBody(h, callerOf, svc.ChangePassword), true)
	r.Route("POST", "/user/block", api.JSON(maxBody, log, svc.Block), true)
	r.Route("POST", "/user/unblock", api.JSON(maxBody, log, svc.Unblock), true)
	r.Route("GET", "/user/blocks", h.blocks, true)
}

type accountRoutes struct {
	svc     *account.Service
	maxBody int
	log     *slog.Logger
}

// callerOf is the bearer of the request's token, as the service knows it.
func callerOf(c *app.RequestContext) account.Caller {
	claims, _ := auth.ClaimsOf(c)
	return account.Caller{UserID: claims.UserID, PlatformID: claims.PlatformID, JTI: claims.JTI}
}

// clientIP is the address the login and registration limits count.
func clientIP(c *app.RequestContext) string { return c.ClientIP() }

// withBody adapts an operation on a JSON body to a route, as api.JSON
// does, but do gets what of reads from the request (the client address,
// the caller) instead of the user ID: POST /auth/login → {token,
// expire_at}, POST /user/password → {revoked}.
func withBody[By, Req, Res any](h accountRoutes, of func(*app.RequestContext) By, do func(ctx context.Context, by By, req Req) (Res, error)) app.HandlerFunc {
	return func(ctx context.Context, c *app.RequestContext) {
		var req Req
		if err := api.BindJSON(c, h.maxBody, &req); err != nil {
			api.WriteError(ctx, c, h.log, err)
			return
		}
		res, err := do(ctx, of(c), req)
		h.write(ctx, c, res, err)
	}
}

// write answers res, or err when it is not nil.
func (h accountRoutes) write(ctx context.Context, c *app.RequestContext, res any, err error) {
	if err != nil {
		api.WriteError(ctx, c, h.log, err)
		return
	}
	api.WriteOK(c, res)
}

// register handles POST /user/register → {user_id}. A closed registration
// is refused before the body is read.
func (h accountRoutes) register(ctx context.Context, c *app.RequestContext) {
	if err := h.svc.RegistrationOpen(); err != nil {
		api.WriteError(ctx, c, h.log, err)
		return
	}
	withBody(h, clientIP, h.svc.Register)(ctx, c)
}

// info handles GET /user/info?user_id= → the caller's own profile (no
// user_id) or another user's public one.
func (h accountRoutes) info(ctx context.Context, c *app.RequestContext) {
	res, err := h.svc.Info(ctx, callerOf(c).UserID, string(c.Query("user_id")))
	h.write(ctx, c, res, err)
}

// blocks handles GET /user/blocks → {blocks: [{user_id, created_at}]}.
func (h accountRoutes) blocks(ctx context.Context, c *app.RequestContext) {
	res, err := h.svc.Blocks(ctx, callerOf(c).UserID)
	h.write(ctx, c, res, err)
}

// refresh handles POST /auth/refresh → {token, expire_at}.
func (h accountRoutes) refresh(ctx context.Context, c *app.RequestContext) {
	res, err := h.svc.Refresh(ctx, callerOf(c))
	h.write(ctx, c, res, err)
}

// logout handles POST /auth/logout → {}.
func (h accountRoutes) logout(ctx context.Context, c *app.RequestContext) {
	h.write(ctx, c, struct{}{}, h.svc.Logout(ctx, callerOf(c)))
}

// logoutAll handles POST /auth/logout_all → {revoked}.
func (h accountRoutes) logoutAll(ctx context.Context, c *app.RequestContext) {
	res, err := h.svc.LogoutAll(ctx, callerOf(c))
	h.write(ctx, c, res, err)
}
