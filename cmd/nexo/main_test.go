package main

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cloudwego/hertz/pkg/common/hlog"

	"github.com/nexo-im/nexo/gateway"
	"github.com/nexo-im/nexo/store/storetest"
)

func TestMain(m *testing.M) {
	// Hertz's logger is process-wide; set it once, before any server.
	hlog.SetLogger(gateway.HertzLogger(slog.New(slog.DiscardHandler)))
	os.Exit(m.Run())
}

// runCLI runs the command line with only the given environment.
func runCLI(t *testing.T, env []string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errOut storetest.LogBuffer
	code = cli(context.Background(), args, &out, &errOut, env)
	return code, out.String(), errOut.String()
}

const validSecret = "0123456789abcdef0123456789abcdef"

// TestConfigErrorsStopServe: a bad value stops `serve` with status 2 and a
// message naming the key (and its variable) before anything starts.
func TestConfigErrorsStopServe(t *testing.T) {
	t.Parallel()
	prod := []string{"NEXO_MYSQL_DSN=root:@tcp(127.0.0.1:1)/x", "NEXO_REDIS_ADDR=127.0.0.1:1"}
	missing := filepath.Join(t.TempDir(), "nope.yaml")
	badYAML := filepath.Join(t.TempDir(), "bad.yaml")
	if err := os.WriteFile(badYAML, []byte("http:\n  adr: \":1\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		env  []string
		args []string
		want []string
	}{
		{"short jwt secret", append(prod, "NEXO_JWT_SECRET=short"), []string{"serve"}, []string{"jwt.secret", "NEXO_JWT_SECRET", "32"}},
		{"no jwt secret outside embedded", prod, nil, []string{"jwt.secret"}},
		{"dsn without redis", []string{"NEXO_MYSQL_DSN=root:@tcp(127.0.0.1:1)/x"}, []string{"serve"}, []string{"mysql.dsn", "redis.addr"}},
		{"bad http addr", []string{"NEXO_HTTP_ADDR=nonsense"}, []string{"serve"}, []string{"http.addr", "NEXO_HTTP_ADDR"}},
		{"bad log level", []string{"NEXO_LOG_LEVEL=loud"}, []string{"serve"}, []string{"log.level", "debug, info, warn, error"}},
		{"bad bcrypt cost", []string{"NEXO_AUTH_BCRYPT_COST=99"}, []string{"serve"}, []string{"auth.bcrypt_cost", "4–31"}},
		{"unknown variable", []string{"NEXO_HTTP_ADRR=:1"}, []string{"serve"}, []string{"NEXO_HTTP_ADRR"}},
		{"missing config file", nil, []string{"--config", missing, "serve"}, []string{missing}},
		{"unknown yaml key", nil, []string{"--config", badYAML, "serve"}, []string{"http.adr"}},
		{"config flag after the command", nil, []string{"serve", "--config", missing}, []string{missing}},
		{"migrate checks too", []string{"NEXO_LOG_FORMAT=xml"}, []string{"migrate"}, []string{"log.format"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, stdout, stderr := runCLI(t, tc.env, tc.args...)
			if code != exitUsage {
				t.Fatalf("exit %d, want %d (stdout %q, stderr %q)", code, exitUsage, stdout, stderr)
			}
			for _, w := range tc.want {
				if !strings.Contains(stderr, w) {
					t.Errorf("stderr %q does not mention %q", stderr, w)
				}
			}
		})
	}
}

func TestUsage(t *testing.T) {
	t.Parallel()
	tests := []struct {
		args   []string
		code   int
		stdout string
		stderr string
	}{
		{[]string{"--help"}, exitOK, "", "Commands:"},
		{[]string{"-h"}, exitOK, "", "migrate"},
		{[]string{"help"}, exitOK, "serve", ""},
		{[]string{"serve", "--help"}, exitOK, "", "nexo [--config PATH] serve"},
		{[]string{"migrate", "-h"}, exitOK, "", "NEXO_SECTION_KEY"},
		{[]string{"version", "--help"}, exitOK, "", "nexo [--config PATH] version"},
		{[]string{"frobnicate"}, exitUsage, "", `unknown command "frobnicate"`},
		{[]string{"--nope"}, exitUsage, "", "flag provided but not defined"},
		{[]string{"serve", "extra"}, exitUsage, "", "unexpected arguments"},
		{[]string{"version"}, exitOK, "nexo ", ""},
	}
	for _, tc := range tests {
		code, stdout, stderr := runCLI(t, nil, tc.args...)
		if code != tc.code || !strings.Contains(stdout, tc.stdout) || !strings.Contains(stderr, tc.stderr) {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want exit %d, stdout ∋ %q, stderr ∋ %q",
				tc.args, code, stdout, stderr, tc.code, tc.stdout, tc.stderr)
		}
	}
	if _, stdout, _ := runCLI(t, nil, "version"); !strings.Contains(stdout, "go1.") || !strings.Contains(stdout, "commit") {
		t.Errorf("version output %q lacks commit or Go version", stdout)
	}
}

func TestMigrateCommand(t *testing.T) {
	t.Parallel()
	t.Run("sqlite", func(t *testing.T) {
		t.Parallel()
		env := []string{"NEXO_SQLITE_PATH=" + filepath.Join(t.TempDir(), "db", "nexo.db")}
		code, stdout, stderr := runCLI(t, env, "migrate")
		if code != exitOK || !strings.Contains(stdout, "applied [1") {
			t.Fatalf("first migrate: exit %d, stdout %q, stderr %q", code, stdout, stderr)
		}
		code, stdout, _ = runCLI(t, env, "migrate")
		if code != exitOK || !strings.Contains(stdout, "up to date") {
			t.Fatalf("second migrate: exit %d, stdout %q", code, stdout)
		}
	})
	t.Run("mariadb", func(t *testing.T) {
		t.Parallel()
		env := []string{"NEXO_MYSQL_DSN=" + storetest.MySQLDSN(t), "NEXO_REDIS_ADDR=127.0.0.1:1", "NEXO_JWT_SECRET=" + validSecret}
		code, stdout, stderr := runCLI(t, env, "migrate")
		if code != exitOK || !strings.Contains(stdout, "applied [1") || !strings.Contains(stdout, "mysql") {
			t.Fatalf("first migrate: exit %d, stdout %q, stderr %q", code, stdout, stderr)
		}
		code, stdout, _ = runCLI(t, env, "migrate")
		if code != exitOK || !strings.Contains(stdout, "up to date") {
			t.Fatalf("second migrate: exit %d, stdout %q", code, stdout)
		}
	})
	t.Run("unreachable database", func(t *testing.T) {
		t.Parallel()
		env := []string{"NEXO_MYSQL_DSN=root:@tcp(127.0.0.1:1)/x?timeout=1s", "NEXO_REDIS_ADDR=127.0.0.1:1", "NEXO_JWT_SECRET=" + validSecret}
		if code, _, stderr := runCLI(t, env, "migrate"); code != exitFailure || !strings.Contains(stderr, "mysql") {
			t.Fatalf("exit %d, stderr %q; want %d naming mysql", code, stderr, exitFailure)
		}
	})
}
