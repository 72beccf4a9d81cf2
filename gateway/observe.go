package gateway

import (
	"context"
	"log/slog"
	"strconv"
	"time"

	"github.com/cloudwego/hertz/pkg/app"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/nexo-im/nexo/gateway/auth"
)

// requestIDHeader is where the request id lives for the whole request: the
// request-id middleware (Server.requestID) sets it on the response
// before any handler runs, so the access log reads it after c.Next.
const requestIDHeader = "X-Request-Id"

// requestIDOf returns the request's id ("" before the request-id middleware
// is installed).
func requestIDOf(c *app.RequestContext) string {
	return string(c.Response.Header.Peek(requestIDHeader))
}

// unmatchedRoute labels requests that matched no route, so a scan of random
// paths cannot blow up the metrics' cardinality.
const unmatchedRoute = "unmatched"

// quietRoutes are logged at debug level: probes and scrapes would drown the
// access log (every few seconds from every orchestrator and Prometheus).
var quietRoutes = map[string]bool{"/healthz": true, "/readyz": true, "/metrics": true}

// httpObserver is the access log and the HTTP metrics, one middleware.
type httpObserver struct {
	log       *slog.Logger
	accessLog bool
	requests  *prometheus.CounterVec
	duration  *prometheus.HistogramVec
}

// newHTTPObserver registers nexo_http_requests_total{method,route,status}
// and nexo_http_request_duration_seconds{method,route} with reg (nil: not
// exported). route is the registered pattern (/user/info, /group/:id...),
// never the raw path.
func newHTTPObserver(log *slog.Logger, accessLog bool, reg prometheus.Registerer) *httpObserver {
	o := &httpObserver{
		log: log, accessLog: accessLog,
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "nexo", Name: "http_requests_total",
			Help: "HTTP requests by method, route pattern and status code (WebSocket upgrades included).",
		}, []string{"method", "route", "status"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: "nexo", Name: "http_request_duration_seconds",
			Help:    "HTTP request latency by method and route pattern, from the first middleware to the response.",
			Buckets: prometheus.ExponentialBuckets(0.0005, 2, 14), // 0.5 ms .. 4 s
		}, []string{"method", "route"}),
	}
	if reg != nil {
		reg.MustRegister(o.requests, o.duration)
	}
	return o
}

// middleware observes one request: the metrics always, the access log line
// (info level; debug for probes and scrapes) when enabled. The line carries
// request_id, method, route, path, status, duration_ms, bytes, client_ip and
// the authenticated user_id when there is one.
func (o *httpObserver) middleware(ctx context.Context, c *app.RequestContext) {
	start := time.Now()
	c.Next(ctx)
	elapsed := time.Since(start)
	route := c.FullPath()
	if route == "" {
		route = unmatchedRoute
	}
	method, status := string(c.Method()), c.Response.StatusCode()
	o.requests.WithLabelValues(method, route, strconv.Itoa(status)).Inc()
	o.duration.WithLabelValues(method, route).Observe(elapsed.Seconds())
	if !o.accessLog {
		return
	}
	level := slog.LevelInfo
	if quietRoutes[route] {
		level = slog.LevelDebug
	}
	if !o.log.Enabled(ctx, level) {
		return
	}
	attrs := []slog.Attr{
		slog.String("request_id", requestIDOf(c)),
		slog.String("method", method), slog.String("route", route), slog.String("path", string(c.Path())),
		slog.Int("status", status), slog.Float64("duration_ms", float64(elapsed.Microseconds())/1000),
		slog.Int("bytes", len(c.Response.Body())), slog.String("client_ip", c.ClientIP()),
	}
	if cl, ok := auth.ClaimsOf(c); ok {
		attrs = append(attrs, slog.String("user_id", cl.UserID))
	}
	o.log.LogAttrs(ctx, level, "http access", attrs...)
}
