package gateway

import (
	"context"

	"github.com/cloudwego/hertz/pkg/app"
	"github.com/cloudwego/hertz/pkg/common/config"
)

// securityHeaders are set on every response, before the handler runs, so
// errors, 404s and panics carry them too. A handler may override one (the
// web client's assets set their own Cache-Control and
// Content-Security-Policy). docs/security.md lists them.
var securityHeaders = [][2]string{
	// Browsers must not guess a type: a JSON body is never run as script.
	{"X-Content-Type-Options", "nosniff"},
	// No page of Nexo may be framed (clickjacking).
	{"X-Frame-Options", "DENY"},
	{"Content-Security-Policy", "default-src 'none'; frame-ancestors 'none'"},
	{"Referrer-Policy", "no-referrer"},
	// API answers carry tokens and messages: no shared or disk cache.
	{"Cache-Control", "no-store"},
}

// setSecurityHeaders is the first middleware of every route.
func setSecurityHeaders(ctx context.Context, c *app.RequestContext) {
	for _, h := range securityHeaders {
		c.Response.Header.Set(h[0], h[1])
	}
	c.Next(ctx)
}

// withoutServerHeader drops Hertz's "Server: hertz" banner: the software
// and its version are nobody's business but the operator's.
func withoutServerHeader() config.Option {
	return config.Option{F: func(o *config.Options) { o.NoDefaultServerHeader = true }}
}
