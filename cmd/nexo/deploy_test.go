package main

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/knadh/koanf/parsers/yaml"
)

// TestDockerfileBakesVersionAndProbes: the image gets its version and commit
// from build args, and a healthcheck that needs no shell (issue 15 item 13).
func TestDockerfileBakesVersionAndProbes(t *testing.T) {
	raw, err := os.ReadFile("../../Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	df := string(raw)
	for _, want := range []string{"ARG VERSION", "ARG COMMIT", "-X main.version=${VERSION}", "-X main.commit=${COMMIT}", `HEALTHCHECK`, `"/nexo", "probe"`} {
		if !strings.Contains(df, want) {
			t.Errorf("Dockerfile lacks %q", want)
		}
	}
}

// TestComposeRunsNexoSafely checks every Nexo service of compose.yaml: built
// with the version args, a healthcheck, a stop grace period longer than its
// drain (http.shutdown_timeout), and a database user that is not root; and
// the MySQL service creates that application user.
func TestComposeRunsNexoSafely(t *testing.T) {
	raw, err := os.ReadFile("../../compose.yaml")
	if err != nil {
		t.Fatal(err)
	}
	doc, err := yaml.Parser().Unmarshal(raw)
	if err != nil {
		t.Fatalf("compose.yaml: %v", err)
	}
	services, _ := doc["services"].(map[string]any)
	if len(services) == 0 {
		t.Fatal("compose.yaml has no services")
	}
	nexos := 0
	for name, v := range services {
		svc, _ := v.(map[string]any)
		env := stringMap(svc["environment"])
		if _, ok := env["NEXO_MYSQL_DSN"]; !ok {
			if name == "mysql" && env["MYSQL_USER"] == "" {
				t.Errorf("service mysql creates no application user (MYSQL_USER)")
			}
			continue
		}
		nexos++
		if dsn := env["NEXO_MYSQL_DSN"]; strings.HasPrefix(dsn, "root:") {
			t.Errorf("service %s connects to MySQL as root: %s", name, dsn)
		}
		if _, ok := svc["healthcheck"].(map[string]any); !ok {
			t.Errorf("service %s has no healthcheck", name)
		}
		if b, ok := svc["build"].(map[string]any); ok {
			args := stringMap(b["args"])
			if args["VERSION"] == "" || args["COMMIT"] == "" {
				t.Errorf("service %s builds without VERSION/COMMIT args: %v", name, args)
			}
		}
		drain := 10 * time.Second // http.shutdown_timeout's default
		if s := env["NEXO_HTTP_SHUTDOWN_TIMEOUT"]; s != "" {
			if drain, err = time.ParseDuration(s); err != nil {
				t.Errorf("service %s: NEXO_HTTP_SHUTDOWN_TIMEOUT %q: %v", name, s, err)
			}
		}
		grace, err := time.ParseDuration(stringOf(svc["stop_grace_period"]))
		if err != nil {
			t.Errorf("service %s: stop_grace_period %v: %v", name, svc["stop_grace_period"], err)
		} else if grace <= drain {
			t.Errorf("service %s: stop_grace_period %s is not longer than the drain %s", name, grace, drain)
		}
	}
	if nexos == 0 {
		t.Fatal("no service sets NEXO_MYSQL_DSN")
	}
}

// stringMap reads a compose environment or args block (a map, or a list of
// KEY=VALUE) as strings.
func stringMap(v any) map[string]string {
	out := map[string]string{}
	switch x := v.(type) {
	case map[string]any:
		for k, v := range x {
			out[k] = stringOf(v)
		}
	case []any:
		for _, e := range x {
			k, v, _ := strings.Cut(stringOf(e), "=")
			out[k] = v
		}
	}
	return out
}

func stringOf(v any) string {
	if v == nil {
		return ""
	}
	return fmt.Sprint(v)
}

// TestProbe: 200 succeeds, anything else (a draining server's 503) fails.
func TestProbe(t *testing.T) {
	t.Parallel()
	var status atomic.Int32
	status.Store(http.StatusOK)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(int(status.Load())) }))
	defer srv.Close()
	if code, _, stderr := runCLI(t, nil, "probe", "--url", srv.URL); code != exitOK {
		t.Fatalf("probe of a 200: exit %d, %s", code, stderr)
	}
	status.Store(http.StatusServiceUnavailable)
	if code, _, stderr := runCLI(t, nil, "probe", "--url", srv.URL); code != exitFailure || !strings.Contains(stderr, "503") {
		t.Fatalf("probe of a 503: exit %d, %s", code, stderr)
	}
}
