package app

import (
	"context"
	"net/http"
	"net/http/pprof"

	"github.com/cloudwego/hertz/pkg/app"
	"github.com/cloudwego/hertz/pkg/common/adaptor"

	"github.com/nexo-im/nexo/gateway/api"
	"github.com/nexo-im/nexo/gateway/wire"
)

// pprofProfiles are the runtime profiles served under /debug/pprof/<name>
// (net/http/pprof), each also linked from the /debug/pprof/ index.
var pprofProfiles = []string{"allocs", "block", "goroutine", "heap", "mutex", "threadcreate"}

// buildPprof serves Go's profiling endpoints (net/http/pprof) under
// /debug/pprof/ so a profile can be taken from a running deployment
// (docs/bench/README.md, "Profiling a running server"). They sit behind
// the admin token like /admin/*: with no admin.token they answer forbidden.
func (a *App) buildPprof(context.Context) error {
	routes := map[string]http.Handler{
		"/debug/pprof/":        http.HandlerFunc(pprof.Index),
		"/debug/pprof/cmdline": http.HandlerFunc(pprof.Cmdline),
		"/debug/pprof/profile": http.HandlerFunc(pprof.Profile),
		"/debug/pprof/symbol":  http.HandlerFunc(pprof.Symbol),
		"/debug/pprof/trace":   http.HandlerFunc(pprof.Trace),
	}
	for _, name := range pprofProfiles {
		routes["/debug/pprof/"+name] = pprof.Handler(name)
	}
	for path, h := range routes {
		a.server.Route("GET", path, a.adminOnly(adaptor.HertzHandler(h)), false)
	}
	return nil
}

// adminOnly runs next only for "Authorization: Bearer <admin.token>"; with
// no admin.token configured every call is forbidden.
func (a *App) adminOnly(next app.HandlerFunc) app.HandlerFunc {
	return func(ctx context.Context, c *app.RequestContext) {
		if !a.isAdmin(c) {
			api.WriteError(ctx, c, a.log, wire.NewError(wire.ReasonForbidden, "admin endpoints need Authorization: Bearer <admin.token>"))
			return
		}
		next(ctx, c)
	}
}

// isAdmin reports whether the request carries the configured admin token.
func (a *App) isAdmin(c *app.RequestContext) bool {
	return adminAuthorized(a.cfg.Admin.Token, c.GetHeader("Authorization"))
}
