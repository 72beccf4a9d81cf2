package app

import (
	"io"
	"net/http"
	"strings"
	"testing"
)

func get(t *testing.T, url, token string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest("GET", url, nil)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestMetricsProtection: with metrics.addr, /metrics is served there and
// no longer on the public listener; with metrics.token it needs the bearer
// token; with neither, the embedded mode serves it on the main listener
// and a deployment on MySQL and Redis does not serve it at all, and says
// at start how to turn it on.
func TestMetricsProtection(t *testing.T) {
	t.Parallel()
	t.Run("separate listener", func(t *testing.T) {
		t.Parallel()
		cfg := embeddedConfig(t)
		cfg.Metrics.Addr = "127.0.0.1:0"
		a, base := startAppValue(t, cfg)
		if code, _ := get(t, base+"/metrics", ""); code != 404 {
			t.Fatalf("public /metrics: %d, want 404", code)
		}
		code, body := get(t, "http://"+a.OpsAddr()+"/metrics", "")
		if code != 200 || !strings.Contains(body, "go_goroutines") {
			t.Fatalf("private /metrics: %d %.200s", code, body)
		}
	})
	t.Run("embedded default", func(t *testing.T) {
		t.Parallel()
		_, base := startAppValue(t, embeddedConfig(t))
		if code, body := get(t, base+"/metrics", ""); code != 200 || !strings.Contains(body, "go_goroutines") {
			t.Fatalf("embedded /metrics: %d %.200s", code, body)
		}
	})
	t.Run("production default", func(t *testing.T) {
		t.Parallel()
		cfg := realConfig(t)
		base, logs, _ := startApp(t, cfg)
		code, body := get(t, base+"/metrics", "")
		if code != 404 || !strings.Contains(body, "not_found") || !strings.Contains(body, "metrics.token") {
			t.Fatalf("/metrics without metrics.addr or metrics.token: %d %.300s", code, body)
		}
		if !strings.Contains(logs.String(), "/metrics is not served") || !strings.Contains(logs.String(), "NEXO_METRICS_TOKEN") {
			t.Fatalf("the start-up log does not say how to serve /metrics:\n%s", logs)
		}
	})
	t.Run("token", func(t *testing.T) {
		t.Parallel()
		cfg := embeddedConfig(t)
		cfg.Metrics.Token = "metrics-token-0123456789"
		_, base := startAppValue(t, cfg)
		for _, tok := range []string{"", "wrong-token-0123456789"} {
			if code, body := get(t, base+"/metrics", tok); code != 401 || !strings.Contains(body, "unauthorized") {
				t.Fatalf("token %q: %d %.200s", tok, code, body)
			}
		}
		if code, body := get(t, base+"/metrics", cfg.Metrics.Token); code != 200 || !strings.Contains(body, "go_goroutines") {
			t.Fatalf("with the token: %d %.200s", code, body)
		}
	})
}
