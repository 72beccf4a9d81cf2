// Package gateway is Nexo's HTTP front door: the Hertz server that the HTTP
// API and the WebSocket endpoint share, its middleware (request ids,
// security headers, access log, the token check) and the health checks.
//
// The routes of the services (gateway/routes) and of the server API are
// added with Server.Route before Run; cmd/app wires them. gateway never
// imports workers.
package gateway

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"runtime/debug"
	"sync/atomic"
	"time"

	"github.com/cloudwego/hertz/pkg/app"
	"github.com/cloudwego/hertz/pkg/app/server"
	"github.com/cloudwego/hertz/pkg/common/config"
	"github.com/cloudwego/hertz/pkg/network/standard"
	"github.com/cloudwego/hertz/pkg/route"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/nexo-im/nexo/configs"
	"github.com/nexo-im/nexo/gateway/api"
	"github.com/nexo-im/nexo/gateway/auth"
	"github.com/nexo-im/nexo/gateway/wire"
)

// ReadyCheck is one dependency /readyz pings; Name appears in the answer
// when Check fails.
type ReadyCheck struct {
	Name  string
	Check func(ctx context.Context) error
}

// Deps are the server's dependencies. Logger and Verifier are required.
type Deps struct {
	HTTP   configs.HTTP
	Logger *slog.Logger
	// Listener, when set, is served instead of listening on HTTP.Addr (so
	// the caller learns the address and bind errors before Run). Only a
	// given Listener gets the connection caps and the first-request
	// deadline (http.max_conns, max_conns_per_ip, read_header_timeout).
	Listener net.Listener
	// Verifier checks the token of the routes registered as authenticated.
	Verifier *auth.Verifier
	// Ready lists what /readyz pings (the database, Redis).
	Ready []ReadyCheck
	// Degraded lists checks whose failure makes /readyz answer 200
	// "degraded" instead of "ready" (Redis memory near maxmemory); their
	// error text is sent, so it must be Nexo's own.
	Degraded []ReadyCheck
	// CORS, when set, runs before every route (preflights included).
	CORS app.HandlerFunc
	// Registry, when set, exports the HTTP metrics
	// (nexo_http_requests_total, nexo_http_request_duration_seconds).
	Registry prometheus.Registerer
	// AccessLog logs one line per request (log.access).
	AccessLog bool
	// OnDrain runs once when Run's ctx ends (SIGTERM), after /readyz turned
	// 503 and before the listener closes (shard leases are released here).
	OnDrain func(ctx context.Context)
	// DrainDelay (cluster.drain_delay) keeps serving, with /readyz 503,
	// this long after SIGTERM, so a load balancer takes the instance out
	// before its listener closes.
	DrainDelay time.Duration
	// MaxUploadBytes, when above twice http.max_body_bytes, is the largest
	// body the server buffers, for the upload routes (objects.*); every
	// other route still answers body_too_long past http.max_body_bytes.
	MaxUploadBytes int
}

// Server is the Hertz server with Nexo's routes.
type Server struct {
	h        *server.Hertz
	deps     Deps
	log      *slog.Logger
	authMW   app.HandlerFunc
	conns    *connTracker
	clientIP func(c *app.RequestContext) string
	// draining is set the moment Run's ctx ends: /readyz answers 503.
	draining atomic.Bool
}

// readyTimeout bounds each /readyz ping.
const readyTimeout = 2 * time.Second

// NewServer builds the server and registers the health routes. It does
// not listen; Run does.
func NewServer(d Deps) (*Server, error) {
	if d.Logger == nil || d.Verifier == nil {
		return nil, errors.New("gateway: Logger and Verifier are required")
	}
	opts := []config.Option{
		server.WithExitWaitTime(d.HTTP.ShutdownTimeout),
		// Hertz refuses bodies above this with its own plain-text 413; up to
		// it, BindJSON answers body_too_long in the envelope. Twice the limit
		// keeps the buffered body bounded while nearly every oversized body
		// gets the documented answer.
		server.WithMaxRequestBodySize(max(2*d.HTTP.MaxBodyBytes, d.MaxUploadBytes)),
		server.WithRedirectTrailingSlash(false),
		server.WithDisablePrintRoute(true),
		withoutServerHeader(),
		// The standard transport: lower latency and less memory per idle
		// WebSocket connection than netpoll here (docs/gateway.md).
		server.WithTransport(standard.NewTransporter),
	}
	if d.HTTP.ReadHeaderTimeout > 0 {
		// Later requests of a keep-alive connection: Hertz's own deadlines.
		opts = append(opts, server.WithReadTimeout(d.HTTP.ReadHeaderTimeout))
	}
	if d.HTTP.IdleTimeout > 0 {
		opts = append(opts, server.WithIdleTimeout(d.HTTP.IdleTimeout))
	}
	if d.Listener != nil {
		// The connection caps and the first request's deadline (capListener)
		// need the listener; cmd always hands one in.
		trusted := trustedNets(d.HTTP.TrustedProxies)
		opts = append(opts, server.WithListener(&capListener{
			Listener: d.Listener, maxTotal: d.HTTP.MaxConns, maxPerIP: d.HTTP.MaxConnsPerIP,
			headerTimeout: d.HTTP.ReadHeaderTimeout, m: newConnMetrics(d.Registry), perIP: map[string]int{},
			exempt: func(ip net.IP) bool { return containsIP(trusted, ip) },
		}))
	} else {
		opts = append(opts, server.WithHostPorts(d.HTTP.Addr))
	}
	h := server.New(opts...)
	// hertz-contrib/websocket hijacks connections; pooling hijacked
	// connections is unsafe with it (see its README and LIBRARY-NOTES).
	h.NoHijackConnPool = true

	s := &Server{
		h: h, deps: d, log: d.Logger,
		authMW:   auth.Middleware(d.Verifier, d.Logger),
		conns:    newConnTracker(h.GetOptions().IdleTimeout),
		clientIP: clientIPFunc(d.HTTP.TrustedProxies),
	}
	// c.ClientIP() anywhere (the access log, the login and registration
	// limits) names the client: X-Forwarded-For only from trusted proxies.
	h.SetClientIPFunc(s.clientIP)
	h.Use(s.pinClientIP, s.requestID, setSecurityHeaders, s.conns.middleware, newHTTPObserver(d.Logger, d.AccessLog, d.Registry).middleware, s.recoverPanics)
	if d.CORS != nil {
		h.Use(d.CORS)
	}
	h.NoRoute(func(ctx context.Context, c *app.RequestContext) {
		api.WriteError(ctx, c, s.log, wire.NewError(wire.ReasonNotFound, fmt.Sprintf("no route %s %s", c.Method(), c.Path())))
	})

	s.Route("GET", "/healthz", s.healthz, false)
	s.Route("GET", "/readyz", s.readyz, false)
	return s, nil
}

// Route registers handler for method and path. With authenticated, the
// auth middleware runs first: the handler sees auth.ClaimsOf(c) and
// unauthenticated requests get 401. Call it before Run; every route must
// also be described in docs/openapi.yaml (a test compares them).
func (s *Server) Route(method, path string, handler app.HandlerFunc, authenticated bool) {
	if authenticated {
		s.h.Handle(method, path, s.authMW, handler)
		return
	}
	s.h.Handle(method, path, handler)
}

// Draining reports whether shutdown began (/readyz answers 503).
func (s *Server) Draining() bool { return s.draining.Load() }

// Routes returns the registered routes (method, path), for the OpenAPI test
// and for logging.
func (s *Server) Routes() route.RoutesInfo { return s.h.Routes() }

// Hertz exposes the underlying server, e.g. to add OnShutdown hooks that
// close WebSocket sessions. Routes go through Route.
func (s *Server) Hertz() *server.Hertz { return s.h }

// Run serves until ctx is done, then shuts down gracefully: it stops
// accepting, lets in-flight requests finish for up to http.shutdown_timeout
// and returns. It returns early with an error if the server cannot serve.
func (s *Server) Run(ctx context.Context) error {
	errc := make(chan error, 1)
	go func() { errc <- s.h.Run() }()
	select {
	case err := <-errc:
		return fmt.Errorf("http server: %w", err)
	case <-ctx.Done():
	}
	s.draining.Store(true)
	if s.deps.OnDrain != nil {
		// Bounded: a drain hook that cannot finish must not keep the
		// process from shutting down.
		drainCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.deps.HTTP.ShutdownTimeout)
		s.deps.OnDrain(drainCtx)
		cancel()
	}
	if s.deps.DrainDelay > 0 {
		select {
		case err := <-errc:
			return fmt.Errorf("http server: %w", err)
		case <-time.After(s.deps.DrainDelay):
		}
	}
	// Shutdown refuses a server that has not yet marked itself running;
	// Run gets there within microseconds of starting.
	for !s.h.IsRunning() {
		select {
		case err := <-errc:
			return fmt.Errorf("http server: %w", err)
		case <-time.After(time.Millisecond):
		}
	}
	shutdownCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.deps.HTTP.ShutdownTimeout)
	defer cancel()
	// Close idle keep-alive connections while Shutdown waits: now, and again
	// as in-flight requests finish (see connTracker).
	closerDone := make(chan struct{})
	go func() {
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		for {
			s.conns.closeIdle()
			select {
			case <-closerDone:
				return
			case <-tick.C:
			}
		}
	}()
	err := s.h.Shutdown(shutdownCtx)
	close(closerDone)
	<-errc
	if err != nil && !errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("http shutdown: %w", err)
	}
	return nil
}

// requestID gives every request an id: the X-Request-Id the client or a
// proxy sent when it is well-formed (wire.ValidRequestID), else a fresh one.
// The id is set as the X-Request-Id response header before any handler
// runs, and carried by the handler's ctx (wire.RequestIDFrom); error
// envelopes repeat it as data.request_id and server-side failures are
// logged with it. See RequestID.
func (s *Server) requestID(ctx context.Context, c *app.RequestContext) {
	id := string(c.Request.Header.Peek(wire.RequestIDHeader))
	if !wire.ValidRequestID(id) {
		id = wire.NewRequestID()
	}
	c.Response.Header.Set(wire.RequestIDHeader, id)
	c.Next(wire.WithRequestID(ctx, id))
}

// pinClientIP sets the server's client-address rule on the request itself:
// Hertz sets it only on the contexts it allocates when serving, and a
// route's limits must not depend on how its context was made (in-process
// test requests are not).
func (s *Server) pinClientIP(ctx context.Context, c *app.RequestContext) {
	c.SetClientIPFunc(s.clientIP)
	c.Next(ctx)
}

// recoverPanics turns a handler panic into a logged 500 internal_error, so
// no client input can take the process down.
func (s *Server) recoverPanics(ctx context.Context, c *app.RequestContext) {
	defer func() {
		if r := recover(); r != nil {
			id := api.RequestID(c)
			s.log.ErrorContext(ctx, "handler panic", "method", string(c.Method()), "path", string(c.Path()),
				"request_id", id, "panic", fmt.Sprint(r), "stack", string(debug.Stack()))
			we := wire.NewError(wire.ReasonInternalError, "").WithRequestID(id)
			c.AbortWithStatusJSON(we.HTTPStatus, wire.Fail(we))
		}
	}()
	c.Next(ctx)
}
