package gateway_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"

	"github.com/cloudwego/hertz/pkg/app"
	"github.com/cloudwego/hertz/pkg/common/ut"

	"github.com/nexo-im/nexo/domain"
	"github.com/nexo-im/nexo/gateway"
	"github.com/nexo-im/nexo/gateway/api"
	"github.com/nexo-im/nexo/gateway/wire"
)

// TestRequestIDAndStripping: every response carries X-Request-Id (a
// well-formed one from the client is adopted, anything else replaced); a
// server-side failure is answered without its internal text, with
// data.request_id equal to the header, and logged with that id.
func TestRequestIDAndStripping(t *testing.T) {
	logs := &lockedBuffer{}
	e := newEnv(t, func(d *gateway.Deps) { d.Logger = slog.New(slog.NewTextHandler(logs, nil)) })
	const secret = "dial tcp 127.0.0.1:16390: connect: connection refused"
	e.srv.Route("GET", "/test/busy", func(ctx context.Context, c *app.RequestContext) {
		api.WriteError(ctx, c, slog.New(slog.NewTextHandler(logs, nil)), fmt.Errorf("%w: %s", domain.ErrServerBusy, secret))
	}, false)
	e.srv.Route("GET", "/test/panic", func(ctx context.Context, c *app.RequestContext) { panic(secret) }, false)

	get := func(path, inID string) (status int, header string, d wire.ErrorData, body string) {
		var hs []ut.Header
		if inID != "" {
			hs = append(hs, ut.Header{Key: "X-Request-Id", Value: inID})
		}
		res := ut.PerformRequest(e.srv.Hertz().Engine, "GET", path, nil, hs...).Result()
		var env wire.Envelope
		env.Data = &d
		_ = json.Unmarshal(res.Body(), &env)
		return res.StatusCode(), string(res.Header.Peek("X-Request-Id")), d, string(res.Body())
	}

	for _, path := range []string{"/test/busy", "/test/panic"} {
		status, hdr, d, body := get(path, "")
		if status < 500 || strings.Contains(body, "dial tcp") || d.Detail != "" {
			t.Fatalf("%s: %d %s", path, status, body)
		}
		if !wire.ValidRequestID(hdr) || d.RequestID != hdr {
			t.Fatalf("%s: header %q, data.request_id %q", path, hdr, d.RequestID)
		}
		found := false
		for _, line := range strings.Split(logs.String(), "\n") {
			if strings.Contains(line, "request_id="+hdr) && strings.Contains(line, "dial tcp") {
				found = true
			}
		}
		if !found {
			t.Fatalf("%s: no log line with request_id=%s and the cause:\n%s", path, hdr, logs)
		}
	}
	// Adopted from a proxy when well-formed; replaced when not.
	if _, hdr, d, _ := get("/nope", "lb-1234.abc_X"); hdr != "lb-1234.abc_X" || d.RequestID != hdr || d.Reason != wire.ReasonNotFound {
		t.Fatalf("adopted id: header %q data %+v", hdr, d)
	}
	if _, hdr, _, _ := get("/healthz", "bad id\r\nX-Evil: 1"); !wire.ValidRequestID(hdr) || strings.Contains(hdr, "Evil") {
		t.Fatalf("malformed id kept: %q", hdr)
	}
}

// lockedBuffer is a strings.Builder safe for a logger and a test to share.
type lockedBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestReadyzDegraded: a failing Degraded check (Redis near maxmemory)
// answers 200 "degraded" with its reason; a failing Ready check still 503.
func TestReadyzDegraded(t *testing.T) {
	e := newEnv(t, func(d *gateway.Deps) {
		d.Degraded = []gateway.ReadyCheck{{Name: "redis_memory", Check: func(context.Context) error {
			return fmt.Errorf("memory 95%% of maxmemory")
		}}}
	})
	r := e.do(t, "GET", "/readyz", "", "")
	var d struct {
		Status   string   `json:"status"`
		Degraded []string `json:"degraded"`
	}
	r.Decode(t, &d)
	if r.Status != 200 || d.Status != "degraded" || len(d.Degraded) != 1 || !strings.Contains(d.Degraded[0], "redis_memory: memory 95%") {
		t.Fatalf("readyz: %d %s", r.Status, r.Raw)
	}
}
