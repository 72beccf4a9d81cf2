package app

import (
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestPprofBehindAdminToken: /debug/pprof/* answers forbidden without the
// admin token (and when none is configured) and serves Go's profiles with it.
func TestPprofBehindAdminToken(t *testing.T) {
	t.Parallel()
	cfg := embeddedConfig(t)
	_, noToken := startAppValue(t, cfg)
	if code, env := call(t, "GET", noToken+"/debug/pprof/heap", "", "anything"); code != 403 || env["err_msg"] != "forbidden" {
		t.Fatalf("no admin.token configured: %d %v", code, env)
	}

	cfg = embeddedConfig(t)
	cfg.Admin.Token = "pprof-admin-token"
	_, base := startAppValue(t, cfg)
	for _, path := range []string{"/debug/pprof/heap", "/debug/pprof/"} {
		if code, env := call(t, "GET", base+path, "", ""); code != 403 || env["err_msg"] != "forbidden" {
			t.Fatalf("%s without a token: %d %v", path, code, env)
		}
		if code, env := call(t, "GET", base+path, "", "wrong"); code != 403 || env["err_msg"] != "forbidden" {
			t.Fatalf("%s with a wrong token: %d %v", path, code, env)
		}
	}
	get := func(path string) (int, string) {
		req, _ := http.NewRequest("GET", base+path, nil)
		req.Header.Set("Authorization", "Bearer pprof-admin-token")
		resp, err := (&http.Client{Timeout: 20 * time.Second}).Do(req)
		if err != nil {
			t.Fatalf("GET %s: %v", path, err)
		}
		defer resp.Body.Close()
		raw, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(raw)
	}
	for path, want := range map[string]string{
		"/debug/pprof/":                     "goroutine",
		"/debug/pprof/heap?debug=1":         "heap profile",
		"/debug/pprof/goroutine?debug=1":    "goroutine profile",
		"/debug/pprof/cmdline":              "",
		"/debug/pprof/profile?seconds=1":    "",
		"/debug/pprof/allocs?debug=1":       "heap profile",
		"/debug/pprof/threadcreate?debug=1": "threadcreate profile",
	} {
		code, body := get(path)
		if code != 200 || !strings.Contains(body, want) || len(body) == 0 {
			t.Fatalf("%s: %d, %d bytes, want %q in it", path, code, len(body), want)
		}
	}
}
