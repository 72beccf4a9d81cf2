package main

import (
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nexo-im/nexo/store/storetest"
)

func TestConfigCheckPrintsEffectiveConfigMasked(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "c.yaml")
	if err := os.WriteFile(path, []byte("http:\n  addr: \":9123\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	env := []string{
		"NEXO_MYSQL_DSN=nexo:db-pass-123@tcp(127.0.0.1:3306)/nexo",
		"NEXO_REDIS_ADDR=127.0.0.1:6379",
		"NEXO_REDIS_PASSWORD=redis-pass-456",
		"NEXO_JWT_SECRET=" + validSecret,
	}
	code, stdout, stderr := runCLI(t, env, "config", "check", "--config", path)
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	for _, secret := range []string{"db-pass-123", "redis-pass-456", validSecret} {
		if strings.Contains(stdout, secret) {
			t.Errorf("secret %q printed:\n%s", secret, stdout)
		}
	}
	for _, want := range []string{`addr: :9123`, "nexo:********@tcp(127.0.0.1:3306)/nexo", "shutdown_timeout: 10s", "secret: '********'"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("output lacks %q:\n%s", want, stdout)
		}
	}
}

func TestConfigCheckReportsEveryError(t *testing.T) {
	t.Parallel()
	code, _, stderr := runCLI(t, []string{"NEXO_HTTP_SHUTDOWN_TIMEOUT=10", "NEXO_LOG_LEVEL=loud"}, "config", "check")
	if code != exitUsage {
		t.Fatalf("exit %d, want %d", code, exitUsage)
	}
	for _, want := range []string{"2 configuration errors", "http.shutdown_timeout (NEXO_HTTP_SHUTDOWN_TIMEOUT)", "is not a duration", "log.level (NEXO_LOG_LEVEL)"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr)
		}
	}
	if code, _, stderr := runCLI(t, nil, "config"); code != exitUsage || !strings.Contains(stderr, "nexo config check") {
		t.Errorf("bare `nexo config`: exit %d, %q", code, stderr)
	}
}

func TestVersionFlag(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{{"--version"}, {"-version"}, {"version"}} {
		code, stdout, _ := runCLI(t, nil, args...)
		if code != exitOK || !strings.HasPrefix(stdout, "nexo ") || !strings.Contains(stdout, "commit ") {
			t.Errorf("%v: exit %d, %q", args, code, stdout)
		}
	}
}

// TestEnvPinnedSwitchesWarn: a two-phase switch set by environment cannot
// change on SIGHUP, and serve says so (issue 15 item 7).
func TestEnvPinnedSwitchesWarn(t *testing.T) {
	t.Parallel()
	env := []string{"NEXO_TWO_PHASE_ENABLED=false", "NEXO_HTTP_ADDR=:1", "NEXO_TWO_PHASE_FAIL_OPEN=true"}
	if got := pinnedSwitches(env); strings.Join(got, ",") != "two_phase.enabled,two_phase.fail_open" {
		t.Errorf("pinned = %v", got)
	}
	var buf storetest.LogBuffer
	warnPinnedSwitches(slog.New(slog.NewTextHandler(&buf, nil)), env)
	out := buf.String()
	if strings.Count(out, "level=WARN") != 2 || !strings.Contains(out, "NEXO_TWO_PHASE_ENABLED") || !strings.Contains(out, "fixed until restart") {
		t.Errorf("warnings:\n%s", out)
	}
	if got := pinnedSwitches([]string{"NEXO_HTTP_ADDR=:1"}); len(got) != 0 {
		t.Errorf("pinned without switch variables = %v", got)
	}
}
