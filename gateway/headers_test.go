package gateway_test

import (
	"context"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/cloudwego/hertz/pkg/app"

	"github.com/nexo-im/nexo/gateway"
)

// TestSecurityHeaders: every answer over a real connection (success, 404,
// 400, 415, 401, a panic) carries nosniff and the other security headers,
// and no Server banner.
func TestSecurityHeaders(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	e := newEnv(t, func(d *gateway.Deps) { d.Listener = ln })
	e.srv.Route("GET", "/boom", func(context.Context, *app.RequestContext) { panic("boom") }, false)
	ctx, cancel := context.WithCancel(context.Background())
	runErr := make(chan error, 1)
	go func() { runErr <- e.srv.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-runErr })

	base := "http://" + ln.Addr().String()
	client := &http.Client{Timeout: 10 * time.Second}
	for _, r := range []struct{ method, path, ctype, body string }{
		{"GET", "/healthz", "", ""},
		{"GET", "/nope", "", ""},
		{"POST", "/user/register", "application/json", `{"nickname":`},
		{"POST", "/user/register", "text/plain", `{}`},
		{"GET", "/user/info", "", ""},
		{"GET", "/boom", "", ""},
	} {
		req, _ := http.NewRequest(r.method, base+r.path, strings.NewReader(r.body))
		if r.ctype != "" {
			req.Header.Set("Content-Type", r.ctype)
		}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		for k, want := range map[string]string{
			"X-Content-Type-Options": "nosniff",
			"X-Frame-Options":        "DENY",
			"Referrer-Policy":        "no-referrer",
			"Cache-Control":          "no-store",
		} {
			if got := resp.Header.Get(k); got != want {
				t.Errorf("%s %s (%d): %s = %q, want %q", r.method, r.path, resp.StatusCode, k, got, want)
			}
		}
		if !strings.Contains(resp.Header.Get("Content-Security-Policy"), "frame-ancestors 'none'") {
			t.Errorf("%s %s: Content-Security-Policy %q", r.method, r.path, resp.Header.Get("Content-Security-Policy"))
		}
		if s := resp.Header.Values("Server"); len(s) != 0 {
			t.Errorf("%s %s: Server header %q", r.method, r.path, s)
		}
	}
}
