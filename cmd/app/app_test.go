package app

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"runtime/pprof"
	"strings"
	"testing"
	"time"

	"github.com/nexo-im/nexo/configs"
	"github.com/nexo-im/nexo/store/storetest"
)

// startApp builds the app for cfg and runs it until the test ends; it
// returns the base URL, the log output and a function that stops the app
// and returns run's error.
func startApp(t *testing.T, cfg configs.Config) (base string, logs *storetest.LogBuffer, stop func() error) {
	t.Helper()
	_, base, logs, stop = runApp(t, cfg)
	return base, logs, stop
}

// startAppValue is startApp for tests that drive the App itself.
func startAppValue(t *testing.T, cfg configs.Config) (*App, string) {
	t.Helper()
	a, base, _, _ := runApp(t, cfg)
	return a, base
}

func runApp(t testing.TB, cfg configs.Config) (a *App, base string, logs *storetest.LogBuffer, stop func() error) {
	t.Helper()
	return runAppLevel(t, cfg, slog.LevelDebug)
}

// runAppLevel is runApp logging at level: a benchmark logs at info, as a
// server does by default.
func runAppLevel(t testing.TB, cfg configs.Config, level slog.Level) (a *App, base string, logs *storetest.LogBuffer, stop func() error) {
	t.Helper()
	logs = &storetest.LogBuffer{}
	logger := slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: level}))
	ctx, cancel := context.WithCancel(context.Background())
	a, err := New(ctx, cfg, logger)
	if err != nil {
		cancel()
		t.Fatalf("New: %v\nlogs:\n%s", err, logs)
	}
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx) }()
	var once bool
	var runErr error
	stop = func() error {
		if !once {
			once = true
			cancel()
			runErr = awaitRun(t, done)
		}
		return runErr
	}
	t.Cleanup(func() { _ = stop() })
	return a, "http://" + a.listener.Addr().String(), logs, stop
}

// runStopLimit bounds how long a test waits for App.Run to return after
// its context is cancelled: far above a drain on a loaded machine, far
// below go test's package timeout, so a stuck shutdown fails one test with
// every goroutine's stack instead of hanging the package.
const runStopLimit = 90 * time.Second

// awaitRun waits for Run's result on done; past runStopLimit it fails the
// test, logs all goroutines and returns an error.
func awaitRun(t testing.TB, done <-chan error) error {
	t.Helper()
	select {
	case err := <-done:
		return err
	case <-time.After(runStopLimit):
		var stacks strings.Builder
		_ = pprof.Lookup("goroutine").WriteTo(&stacks, 2)
		t.Errorf("App.Run did not return within %s of cancel; goroutines:\n%s", runStopLimit, stacks.String())
		return fmt.Errorf("App.Run did not return within %s", runStopLimit)
	}
}

// call sends a JSON request and decodes the envelope.
func call(t *testing.T, method, url, body, token string) (int, map[string]any) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	client := &http.Client{Timeout: 10 * time.Second}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var env map[string]any
	if err := json.Unmarshal(raw, &env); err != nil {
		t.Fatalf("%s %s: %d %q is not an envelope", method, url, resp.StatusCode, raw)
	}
	return resp.StatusCode, env
}

func dataField(env map[string]any, key string) string {
	d, _ := env["data"].(map[string]any)
	return fmt.Sprint(d[key])
}

// smoke checks health and a register → login → info → logout round trip.
func smoke(t *testing.T, base string) {
	t.Helper()
	for _, path := range []string{"/healthz", "/readyz"} {
		if code, env := call(t, "GET", base+path, "", ""); code != 200 || env["err_code"] != 0.0 {
			t.Fatalf("%s: %d %v", path, code, env)
		}
	}
	if code, env := call(t, "POST", base+"/user/register", `{"user_id":"smoke","nickname":"S","password":"plum-tart-9"}`, ""); code != 200 {
		t.Fatalf("register: %d %v", code, env)
	}
	code, env := call(t, "POST", base+"/auth/login", `{"user_id":"smoke","password":"plum-tart-9","platform_id":5}`, "")
	token := dataField(env, "token")
	if code != 200 || token == "" {
		t.Fatalf("login: %d %v", code, env)
	}
	if code, env := call(t, "GET", base+"/user/info", "", token); code != 200 || dataField(env, "user_id") != "smoke" {
		t.Fatalf("info: %d %v", code, env)
	}
	if code, env := call(t, "POST", base+"/auth/logout", "", token); code != 200 {
		t.Fatalf("logout: %d %v", code, env)
	}
	if code, env := call(t, "GET", base+"/user/info", "", token); code != 401 || env["err_msg"] != "token_revoked" {
		t.Fatalf("info after logout: %d %v", code, env)
	}
}

func embeddedConfig(t testing.TB) configs.Config {
	cfg := configs.Default()
	cfg.HTTP.Addr = "127.0.0.1:0"
	cfg.SQLite.Path = filepath.Join(t.TempDir(), "data", "nexo.db")
	cfg.Auth.BcryptCost = 4
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	if !cfg.Embedded() {
		t.Fatal("want the embedded default")
	}
	return cfg
}

// TestServeEmbedded: with no DSN and no Redis address, the process runs on
// an SQLite file and the in-process Redis, says so, and serves.
func TestServeEmbedded(t *testing.T) {
	t.Parallel()
	cfg := embeddedConfig(t)
	base, logs, stop := startApp(t, cfg)
	smoke(t, base)
	for _, want := range []string{"embedded development mode", "not for production", "lost at exit", "embedded=true",
		"jwt.secret is empty", "tokens will not survive a restart", "schema ready"} {
		if !strings.Contains(logs.String(), want) {
			t.Errorf("logs lack %q:\n%s", want, logs)
		}
	}
	if err := stop(); err != nil {
		t.Fatalf("run: %v", err)
	}
	if _, err := os.Stat(cfg.SQLite.Path); err != nil {
		t.Fatalf("sqlite file: %v", err)
	}
	if !strings.Contains(logs.String(), "stopped") {
		t.Errorf("no clean stop in the logs:\n%s", logs)
	}
}

// TestServeMySQLRedis: with mysql.dsn and redis.addr set, the same process
// runs on MariaDB and the real Redis.
func TestServeMySQLRedis(t *testing.T) {
	t.Parallel()
	cfg := configs.Default()
	cfg.HTTP.Addr = "127.0.0.1:0"
	cfg.MySQL.DSN = storetest.MySQLDSN(t)
	rdb, prefix := storetest.Redis(t)
	cfg.Redis.Addr = rdb.Options().Addr
	cfg.Redis.KeyPrefix = prefix
	cfg.JWT.Secret = validSecret
	cfg.Auth.BcryptCost = 4
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	base, logs, stop := startApp(t, cfg)
	smoke(t, base)
	if strings.Contains(logs.String(), "embedded development mode") {
		t.Errorf("embedded mode logged with a DSN set:\n%s", logs)
	}
	// The token record went to the real Redis under the configured prefix.
	if n := rdb.Exists(context.Background(), prefix+":token:smoke:5").Val(); n != 0 {
		t.Errorf("token record still present after logout")
	}
	if err := stop(); err != nil {
		t.Fatalf("run: %v", err)
	}
}

// TestStartFailsCleanly: a port in use stops start-up with an error naming
// http.addr, and releases what was opened.
func TestStartFailsCleanly(t *testing.T) {
	t.Parallel()
	cfg := embeddedConfig(t)
	base, _, _ := startApp(t, cfg) // holds a port
	cfg2 := embeddedConfig(t)
	cfg2.HTTP.Addr = strings.TrimPrefix(base, "http://")
	_, err := New(context.Background(), cfg2, slog.New(slog.DiscardHandler))
	if err == nil || !strings.Contains(err.Error(), "http.addr") {
		t.Fatalf("New on a used port: %v, want an error naming http.addr", err)
	}
}
