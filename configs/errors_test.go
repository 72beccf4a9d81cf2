package configs

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestLoadReportsEveryErrorAtOnceWithKeyAndVariable(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "c.yaml")
	yml := "http:\n  addr: nope\n  shutdown_timeot: 5s\nws:\n  ping_interval: soon\n"
	if err := os.WriteFile(path, []byte(yml), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := Load(path, []string{
		"NEXO_HTTP_SHUTDOWN_TIMEOUT=abc", // bad duration
		"NEXO_REDIS_DB=x",                // not an integer
		"NEXO_WS_SEND_QUEUE=2",           // out of range
		"NEXO_TWO_PHASE_ENABLED=maybe",   // not a boolean
		"NEXO_NO_SUCH_KEY=1",             // unknown variable
	})
	if err == nil {
		t.Fatal("Load accepted five bad values")
	}
	if !IsInvalid(err) {
		t.Errorf("IsInvalid(%v) = false", err)
	}
	msg := err.Error()
	for _, want := range []string{
		`config http.shutdown_timeout (NEXO_HTTP_SHUTDOWN_TIMEOUT): "abc" is not a duration`,
		`config ws.ping_interval (NEXO_WS_PING_INTERVAL): "soon" is not a duration`,
		`config redis.db (NEXO_REDIS_DB): "x" is not an integer`,
		`config two_phase.enabled (NEXO_TWO_PHASE_ENABLED): "maybe" is not a boolean`,
		`config ws.send_queue (NEXO_WS_SEND_QUEUE): must be >= 8`,
		`config http.addr (NEXO_HTTP_ADDR): "nope" is not host:port`,
		`unknown key "http.shutdown_timeot"`,
		`unknown environment variable(s) NEXO_NO_SUCH_KEY`,
	} {
		if !strings.Contains(msg, want) {
			t.Errorf("error lacks %q; got:\n%s", want, msg)
		}
	}
	if n := strings.Count(msg, "\n") + 1; n != 9 { // ws.high_water fails too: 192 > ws.send_queue
		t.Errorf("got %d error lines, want 9:\n%s", n, msg)
	}
}

func TestValidateReportsEveryFailingKey(t *testing.T) {
	c := Default()
	c.WS.SendQueue = 1
	c.Streams.Shards = 0
	c.Log.Level = "loud"
	err := c.Validate()
	if err == nil {
		t.Fatal("no error")
	}
	for _, key := range []string{"ws.send_queue", "streams.shards", "log.level", "ws.high_water"} {
		if !strings.Contains(err.Error(), "config "+key+" ("+EnvName(key)+")") {
			t.Errorf("error lacks %s: %v", key, err)
		}
	}
}

func TestMaskedYAMLHidesSecretsAndRoundTrips(t *testing.T) {
	c := Default()
	c.MySQL.DSN = "nexo:s3cr3t-pw@tcp(db:3306)/nexo?parseTime=true"
	c.Redis.Addr = "redis:6379"
	c.Redis.Password = "redis-pw"
	c.JWT.Secret = strings.Repeat("j", 40)
	c.Admin.Token = "admin-token"
	out, err := c.MaskedYAML()
	if err != nil {
		t.Fatal(err)
	}
	text := string(out)
	for _, secret := range []string{"s3cr3t-pw", "redis-pw", "jjjj", "admin-token"} {
		if strings.Contains(text, secret) {
			t.Errorf("secret %q printed:\n%s", secret, text)
		}
	}
	for _, want := range []string{"nexo:" + Masked + "@tcp(db:3306)/nexo", "shutdown_timeout: 10s", "addr: redis:6379"} {
		if !strings.Contains(text, want) {
			t.Errorf("output lacks %q:\n%s", want, text)
		}
	}

	// The defaults' rendering (no secrets set) loads back to the defaults:
	// every key is printed, in a form Load accepts.
	def, err := Default().MaskedYAML()
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "effective.yaml")
	if err := os.WriteFile(path, def, 0o600); err != nil {
		t.Fatal(err)
	}
	back, err := Load(path, []string{})
	if err != nil {
		t.Fatalf("printed defaults do not load: %v\n%s", err, def)
	}
	back.WS.AllowedOrigins = nil
	if got, want := mustYAML(t, back), string(def); got != want {
		t.Errorf("round trip differs:\n got %s\nwant %s", got, want)
	}
}

func mustYAML(t *testing.T, c Config) string {
	t.Helper()
	b, err := c.MaskedYAML()
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestIsSecret(t *testing.T) {
	for key, want := range map[string]bool{
		"jwt.secret": true, "redis.password": true, "admin.token": true,
		"redis.key_prefix": false, "mysql.dsn": false, "http.addr": false,
	} {
		if IsSecret(key) != want {
			t.Errorf("IsSecret(%s) = %v", key, !want)
		}
	}
}
