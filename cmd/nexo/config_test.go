package main

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nexo-im/nexo/configs"
	"github.com/nexo-im/nexo/store"
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

// TestConfigCheckReportsDeployment: config check says whether the
// database and redis.key_prefix belong to each other, writing nothing:
// not recorded before the first start, bound after it, refused (status 1,
// naming both prefixes) for another prefix on the database, and not
// checked (status 0) when Redis is out of reach.
func TestConfigCheckReportsDeployment(t *testing.T) {
	t.Parallel()
	dsn := storetest.MySQLDSN(t)
	rdb, prefix := storetest.Redis(t)
	env := func(redisAddr, prefix string) []string {
		return []string{"NEXO_MYSQL_DSN=" + dsn, "NEXO_REDIS_ADDR=" + redisAddr, "NEXO_REDIS_KEY_PREFIX=" + prefix, "NEXO_JWT_SECRET=" + validSecret}
	}
	addr := rdb.Options().Addr
	code, stdout, stderr := runCLI(t, env(addr, prefix), "config", "check")
	if code != exitOK || !strings.Contains(stdout, "\n# deployment: ") || !strings.Contains(stdout, "not recorded yet") {
		t.Fatalf("before the first start: exit %d\n%s\n%s", code, stdout, stderr)
	}
	if n, _ := rdb.Exists(context.Background(), store.Keys{Prefix: prefix}.Deployment()).Result(); n != 0 {
		t.Fatal("config check recorded the deployment")
	}

	// The first start, as serve does it.
	ctx := context.Background()
	mcfg := configs.Default().MySQL
	mcfg.DSN = dsn
	db, err := store.OpenMySQL(ctx, mcfg)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := store.BindDeployment(ctx, db, rdb, store.Keys{Prefix: prefix}); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr = runCLI(t, env(addr, prefix), "config", "check")
	if code != exitOK || !strings.Contains(stdout, "belong to each other") {
		t.Fatalf("after the first start: exit %d\n%s\n%s", code, stdout, stderr)
	}

	other := prefix + "-other"
	t.Cleanup(func() { storetest.DeletePrefix(rdb, other) })
	code, stdout, stderr = runCLI(t, env(addr, other), "config", "check")
	if code != exitFailure || !strings.Contains(stdout, "REFUSED") || !strings.Contains(stdout, "redis:") ||
		!strings.Contains(stderr, `belongs to redis.key_prefix \"`+prefix+`\"`) || !strings.Contains(stderr, `uses redis.key_prefix \"`+other+`\"`) {
		t.Fatalf("another prefix on the database: exit %d\n%s\n%s", code, stdout, stderr)
	}

	code, stdout, stderr = runCLI(t, env("127.0.0.1:1", prefix), "config", "check")
	if code != exitOK || !strings.Contains(stdout, "# deployment: not checked") {
		t.Fatalf("Redis out of reach: exit %d\n%s\n%s", code, stdout, stderr)
	}
}
