package app

import (
	"bufio"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// scrape returns /metrics as text.
func scrape(t *testing.T, base string) string {
	t.Helper()
	resp, err := http.Get(base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("/metrics: %d %v", resp.StatusCode, err)
	}
	return string(b)
}

// metricNames lists every metric family in a scrape (histograms and
// summaries under their family name and their _bucket/_sum/_count series).
func metricNames(text string) map[string]bool {
	names := map[string]bool{}
	sc := bufio.NewScanner(strings.NewReader(text))
	sc.Buffer(make([]byte, 1<<20), 1<<22)
	for sc.Scan() {
		line := sc.Text()
		if name, ok := strings.CutPrefix(line, "# TYPE "); ok {
			names[strings.Fields(name)[0]] = true
			continue
		}
		if line == "" || line[0] == '#' {
			continue
		}
		name := line
		if i := strings.IndexAny(line, "{ "); i >= 0 {
			name = line[:i]
		}
		names[name] = true
	}
	return names
}

// TestAccessLogAndHTTPMetrics: every request is logged with its route,
// status and request id, and counted by route and status; the build, the
// database pool and the Redis pool are exported (issue 15 item 11).
func TestAccessLogAndHTTPMetrics(t *testing.T) {
	t.Parallel()
	a, base, logs, _ := runApp(t, embeddedConfig(t))
	a.RegisterBuildInfo("v9.9.9-test", "abc123")
	token := user(t, base, "obs")
	// X-Forwarded-For from a peer that is not a trusted proxy names nobody:
	// the access log shows the TCP peer, as the limits use.
	req, _ := http.NewRequest("GET", base+"/user/info", nil)
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("X-Forwarded-For", "203.0.113.9")
	resp, err := (&http.Client{Timeout: 10 * time.Second}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("/user/info: %d", resp.StatusCode)
	}
	if code, _ := call(t, "GET", base+"/no/such/path/42", "", ""); code != 404 {
		t.Fatalf("unknown path: %d", code)
	}
	text := scrape(t, base)
	for _, want := range []string{
		`nexo_http_requests_total{method="GET",route="/user/info",status="200"} 1`,
		`nexo_http_requests_total{method="GET",route="unmatched",status="404"} 1`,
		`nexo_http_request_duration_seconds_count{method="POST",route="/auth/login"} 1`,
		`nexo_build_info{commit="abc123",go_version="go`,
	} {
		if !strings.Contains(text, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	names := metricNames(text)
	for _, want := range []string{"go_sql_open_connections", "go_sql_wait_count_total", "nexo_redis_pool_total_connections", "nexo_redis_pool_timeouts_total"} {
		if !names[want] {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	if strings.Contains(text, "/no/such/path") {
		t.Error("a raw unmatched path became a label")
	}
	log := logs.String()
	var line string
	for _, l := range strings.Split(log, "\n") {
		if strings.Contains(l, `msg="http access"`) && strings.Contains(l, "route=/user/info") {
			line = l
		}
	}
	for _, want := range []string{"level=INFO", "status=200", "request_id=", "user_id=obs", "duration_ms=", "method=GET", "client_ip=127.0.0.1"} {
		if !strings.Contains(line, want) {
			t.Errorf("access log line %q lacks %s", line, want)
		}
	}
}
