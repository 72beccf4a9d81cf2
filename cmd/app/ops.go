package app

import (
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/cloudwego/hertz/pkg/common/adaptor"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// buildOps serves the operator routes — /metrics, and whatever else is
// mounted with mountOps (thru's /debug/pprof) — on their own listener when
// metrics.addr is set (e.g. 127.0.0.1:9090, never exposed publicly), else
// on the main listener. metrics.token, when set, is required on either as
// "Authorization: Bearer <token>" (docs/security.md). Outside the embedded
// mode, with neither set, they are not served at all: the main listener is
// public, and what they show (traffic, users online, Redis memory) is the
// operator's.
func (a *App) buildOps(context.Context) error {
	if a.cfg.Metrics.Addr != "" {
		ln, err := net.Listen("tcp", a.cfg.Metrics.Addr)
		if err != nil {
			return fmt.Errorf("listen on %s (metrics.addr): %w", a.cfg.Metrics.Addr, err)
		}
		a.opsListener = ln
		a.opsMux = http.NewServeMux()
		srv := &http.Server{Handler: a.opsMux, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: time.Minute}
		a.add(component{name: "metrics listener",
			run: func(ctx context.Context) error {
				errc := make(chan error, 1)
				go func() { errc <- srv.Serve(ln) }()
				select {
				case err := <-errc:
					return fmt.Errorf("metrics listener: %w", err)
				case <-ctx.Done():
				}
				sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), a.cfg.HTTP.ShutdownTimeout)
				defer cancel()
				if err := srv.Shutdown(sctx); err != nil && !errors.Is(err, context.DeadlineExceeded) {
					return err
				}
				return nil
			},
			stop: func(context.Context) error {
				if err := ln.Close(); err != nil && !errors.Is(err, net.ErrClosed) {
					return err
				}
				return nil
			}})
	} else if a.opsOff() {
		a.log.Info("/metrics is not served: outside the embedded mode it needs metrics.addr (a private listener, e.g. 127.0.0.1:9090) or metrics.token (NEXO_METRICS_ADDR, NEXO_METRICS_TOKEN; docs/operations.md)")
	}
	a.metrics.MustRegister(newRedisMemoryCollector(a.rdb))
	a.mountOps("/metrics", promhttp.HandlerFor(a.metrics, promhttp.HandlerOpts{}))
	return nil
}

// mountOps mounts an operator route (GET) where buildOps put them: on the
// metrics.addr listener (net/http ServeMux patterns: a path ending in "/"
// is a prefix) or, without one, on the main listener (a trailing "/"
// becomes a Hertz catch-all). Either way metrics.token, when set, guards it.
// Call it after buildOps, before Run.
func (a *App) mountOps(path string, h http.Handler) {
	if a.opsOff() {
		h = http.HandlerFunc(opsDisabled)
	}
	h = a.opsAuth(h)
	if a.opsMux != nil {
		a.opsMux.Handle(path, h)
		return
	}
	route := path
	if strings.HasSuffix(path, "/") {
		route = path + "*rest"
	}
	a.server.Route("GET", route, adaptor.HertzHandler(h), false)
}

// opsOff reports whether the operator routes are not served: outside the
// embedded mode with neither metrics.addr nor metrics.token.
func (a *App) opsOff() bool {
	return !a.embedded && a.cfg.Metrics.Addr == "" && a.cfg.Metrics.Token == ""
}

// opsDisabled answers an operator route that is not served (opsOff) with
// 404 not_found, saying how to turn it on.
func opsDisabled(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(http.StatusNotFound)
	_, _ = w.Write([]byte(`{"err_code":1300,"err_msg":"not_found","data":{"reason":"not_found","detail":"operator routes are not served on the public listener: set metrics.addr (a private listener) or metrics.token (docs/operations.md)"}}`))
}

// opsAuth requires "Authorization: Bearer <metrics.token>" when a token is
// configured, compared in constant time.
func (a *App) opsAuth(h http.Handler) http.Handler {
	want := a.cfg.Metrics.Token
	if want == "" {
		return h
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		if !ok || subtle.ConstantTimeCompare([]byte(got), []byte(want)) != 1 {
			w.Header().Set("WWW-Authenticate", `Bearer realm="nexo-metrics"`)
			w.Header().Set("Content-Type", "application/json; charset=utf-8")
			w.WriteHeader(http.StatusUnauthorized)
			_, _ = w.Write([]byte(`{"err_code":1106,"err_msg":"unauthorized","data":{"reason":"unauthorized","detail":"operator routes need Authorization: Bearer <metrics.token>"}}`))
			return
		}
		h.ServeHTTP(w, r)
	})
}

// OpsAddr is the metrics.addr listener's host:port, or "" when the operator
// routes share the main listener.
func (a *App) OpsAddr() string {
	if a.opsListener == nil {
		return ""
	}
	return a.opsListener.Addr().String()
}
