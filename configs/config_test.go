package configs

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/knadh/koanf/parsers/yaml"
	"github.com/knadh/koanf/providers/file"
	"github.com/knadh/koanf/v2"
)

func TestSampleYAMLDocumentsEveryKeyWithItsDefault(t *testing.T) {
	k := koanf.New(".")
	if err := k.Load(file.Provider("nexo.yaml"), yaml.Parser()); err != nil {
		t.Fatal(err)
	}
	for _, key := range Keys() {
		if !k.Exists(key) {
			t.Errorf("configs/nexo.yaml does not document %s", key)
		}
	}
	cfg, err := Load("nexo.yaml", []string{})
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.WS.AllowedOrigins) != 0 {
		t.Errorf("allowed_origins = %v", cfg.WS.AllowedOrigins)
	}
	cfg.WS.AllowedOrigins = nil // [] in YAML, nil in Default()
	if len(cfg.Redis.Addrs) != 0 {
		t.Errorf("redis.addrs = %v", cfg.Redis.Addrs)
	}
	cfg.Redis.Addrs = nil
	for _, l := range []*[]string{&cfg.HTTP.CORS.AllowedOrigins, &cfg.ServerAPI.Keys, &cfg.Webhooks.Events, &cfg.Moderation.BlockedWords} {
		if len(*l) == 0 {
			*l = nil
		}
	}
	if len(cfg.HTTP.TrustedProxies) != 0 {
		t.Errorf("trusted_proxies = %v", cfg.HTTP.TrustedProxies)
	}
	cfg.HTTP.TrustedProxies = nil
	if want := Default(); !reflect.DeepEqual(cfg, want) {
		t.Errorf("nexo.yaml values differ from Default():\n got %+v\nwant %+v", cfg, want)
	}
}

func TestEnvNamesAreUnique(t *testing.T) {
	seen := map[string]string{}
	for _, key := range Keys() {
		name := EnvName(key)
		if other, dup := seen[name]; dup {
			t.Errorf("%s and %s share %s", key, other, name)
		}
		seen[name] = key
	}
	if EnvName("http.addr") != "NEXO_HTTP_ADDR" || EnvName("two_phase.enabled") != "NEXO_TWO_PHASE_ENABLED" {
		t.Error("naming rule changed")
	}
}

func TestEnvOverridesFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "c.yaml")
	if err := os.WriteFile(path, []byte("http:\n  addr: \":9000\"\nws:\n  ping_interval: 5s\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := Load(path, []string{
		"NEXO_HTTP_ADDR=127.0.0.1:9100",
		"NEXO_TWO_PHASE_ENABLED=false",
		"NEXO_STREAMS_SHARDS=4",
		"NEXO_WS_ALLOWED_ORIGINS=http://a.example, http://b.example",
		"NEXO_TEST_MYSQL_DSN=ignored",
		"PATH=/bin",
	})
	if err != nil {
		t.Fatal(err)
	}
	if cfg.HTTP.Addr != "127.0.0.1:9100" || cfg.TwoPhase.Enabled || cfg.Streams.Shards != 4 {
		t.Errorf("env not applied: %+v", cfg)
	}
	if cfg.WS.PingInterval != 5*time.Second {
		t.Errorf("file not applied: ping_interval = %v", cfg.WS.PingInterval)
	}
	if len(cfg.WS.AllowedOrigins) != 2 || cfg.WS.AllowedOrigins[1] != "http://b.example" {
		t.Errorf("allowed_origins = %q", cfg.WS.AllowedOrigins)
	}
}

func TestBadValuesNameTheKey(t *testing.T) {
	cases := []struct {
		env  []string
		want string
	}{
		{[]string{"NEXO_WS_LOGIN_POLICY=some"}, "ws.login_policy"},
		{[]string{"NEXO_HTTP_ADDR=nope"}, "http.addr"},
		{[]string{"NEXO_MYSQL_DSN=x", "NEXO_REDIS_ADDR=127.0.0.1:6379", "NEXO_JWT_SECRET=short"}, "jwt.secret"},
		{[]string{"NEXO_MYSQL_DSN=x"}, "mysql.dsn"},
		{[]string{"NEXO_STREAMS_SHARDS=0"}, "streams.shards"},
		{[]string{"NEXO_STREAMS_SHARDS=many"}, "shards"},
		{[]string{"NEXO_TWO_PHASE_ENABLE=true"}, "NEXO_TWO_PHASE_ENABLE"},
		{[]string{"NEXO_LOG_LEVEL=loud"}, "allowed: debug, info, warn, error"},
	}
	for _, c := range cases {
		_, err := Load("", c.env)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: error %v, want mention of %q", c.env, err, c.want)
		}
	}
}

func TestUnknownYAMLKeyRefused(t *testing.T) {
	path := filepath.Join(t.TempDir(), "c.yaml")
	if err := os.WriteFile(path, []byte("two_phase:\n  enable: true\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(path, []string{}); err == nil || !strings.Contains(err.Error(), "two_phase.enable") {
		t.Fatalf("err = %v", err)
	}
	if _, err := Load(filepath.Join(t.TempDir(), "missing.yaml"), []string{}); err == nil {
		t.Fatal("missing file accepted")
	}
}

func TestSecretRequiredOutsideEmbedded(t *testing.T) {
	secret := strings.Repeat("s", MinJWTSecretLen)
	cfg, err := Load("", []string{"NEXO_MYSQL_DSN=x", "NEXO_REDIS_ADDR=127.0.0.1:6379", "NEXO_JWT_SECRET=" + secret})
	if err != nil || cfg.Embedded() {
		t.Fatalf("cfg embedded=%v err=%v", cfg.Embedded(), err)
	}
	cfg, err = Load("", []string{})
	if err != nil || !cfg.Embedded() {
		t.Fatalf("embedded default refused: %v", err)
	}
}

func TestRedisModes(t *testing.T) {
	base := []string{"NEXO_MYSQL_DSN=x", "NEXO_JWT_SECRET=" + strings.Repeat("s", MinJWTSecretLen)}
	ok := []struct {
		env   []string
		mode  string
		addrs []string
	}{
		{[]string{"NEXO_REDIS_ADDR=r:6379"}, RedisStandalone, []string{"r:6379"}},
		{[]string{"NEXO_REDIS_ADDRS=r:6379"}, RedisStandalone, []string{"r:6379"}},
		{[]string{"NEXO_REDIS_MODE=cluster", "NEXO_REDIS_ADDRS=a:7000,b:7001, c:7002"}, RedisCluster, []string{"a:7000", "b:7001", "c:7002"}},
		{[]string{"NEXO_REDIS_MODE=sentinel", "NEXO_REDIS_ADDRS=s1:26379,s2:26379", "NEXO_REDIS_MASTER_NAME=nexo",
			"NEXO_REDIS_SENTINEL_PASSWORD=p", "NEXO_REDIS_TLS_ENABLED=true", "NEXO_REDIS_TLS_SERVER_NAME=redis.internal"},
			RedisSentinel, []string{"s1:26379", "s2:26379"}},
	}
	for _, c := range ok {
		cfg, err := Load("", append(c.env, base...))
		if err != nil {
			t.Errorf("%v: %v", c.env, err)
			continue
		}
		if cfg.Redis.Mode != c.mode || !reflect.DeepEqual(cfg.Redis.Addresses(), c.addrs) || cfg.Embedded() {
			t.Errorf("%v: mode %q addrs %q embedded %v", c.env, cfg.Redis.Mode, cfg.Redis.Addresses(), cfg.Embedded())
		}
	}
	bad := []struct {
		env  []string
		want string
	}{
		{[]string{"NEXO_REDIS_MODE=replica", "NEXO_REDIS_ADDR=r:1"}, "NEXO_REDIS_MODE): allowed: standalone, cluster, sentinel"},
		{[]string{"NEXO_REDIS_MODE=cluster"}, "redis.addrs (NEXO_REDIS_ADDRS): must list"},
		{[]string{"NEXO_REDIS_MODE=cluster", "NEXO_REDIS_ADDR=r:1"}, "redis.addr (NEXO_REDIS_ADDR): only for redis.mode standalone"},
		{[]string{"NEXO_REDIS_MODE=cluster", "NEXO_REDIS_ADDRS=a:1,nope"}, "redis.addrs (NEXO_REDIS_ADDRS): [\"a:1\" \"nope\"]: every entry"},
		{[]string{"NEXO_REDIS_MODE=cluster", "NEXO_REDIS_ADDRS=a:1", "NEXO_REDIS_DB=2"}, "redis.db"},
		{[]string{"NEXO_REDIS_MODE=sentinel", "NEXO_REDIS_ADDRS=a:1"}, "redis.master_name (NEXO_REDIS_MASTER_NAME)"},
		{[]string{"NEXO_REDIS_ADDRS=a:1,b:2"}, "standalone takes one server"},
		{[]string{"NEXO_REDIS_ADDR=a:1", "NEXO_REDIS_TLS_CA_FILE=/ca.pem"}, "redis.tls.enabled (NEXO_REDIS_TLS_ENABLED)"},
	}
	for _, c := range bad {
		_, err := Load("", append(c.env, base...))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: error %v, want %q", c.env, err, c.want)
		}
	}
}

// The embedded default runs fewer stream shards and a shorter idempotency
// TTL unless they are set; a deployment with MySQL and Redis keeps the
// general defaults.
func TestEmbeddedDefaults(t *testing.T) {
	secret := strings.Repeat("s", MinJWTSecretLen)
	for _, tc := range []struct {
		env  []string
		want int
	}{
		{nil, EmbeddedShards},
		{[]string{"NEXO_STREAMS_SHARDS=8"}, 8},
		{[]string{"NEXO_MYSQL_DSN=x", "NEXO_REDIS_ADDR=127.0.0.1:6379", "NEXO_JWT_SECRET=" + secret}, Default().Streams.Shards},
	} {
		cfg, err := Load("", append([]string{}, tc.env...))
		if err != nil || cfg.Streams.Shards != tc.want {
			t.Errorf("%v: shards = %d, %v; want %d", tc.env, cfg.Streams.Shards, err, tc.want)
		}
	}
	for _, tc := range []struct {
		env  []string
		want time.Duration
	}{
		{nil, EmbeddedIdempotencyTTL},
		{[]string{"NEXO_TWO_PHASE_IDEMPOTENCY_TTL=2h"}, 2 * time.Hour},
		{[]string{"NEXO_MYSQL_DSN=x", "NEXO_REDIS_ADDR=127.0.0.1:6379", "NEXO_JWT_SECRET=" + secret}, Default().TwoPhase.IdempotencyTTL},
	} {
		cfg, err := Load("", append([]string{}, tc.env...))
		if err != nil || cfg.TwoPhase.IdempotencyTTL != tc.want {
			t.Errorf("%v: idempotency_ttl = %v, %v; want %v", tc.env, cfg.TwoPhase.IdempotencyTTL, err, tc.want)
		}
	}
	for _, tc := range []struct {
		env  []string
		want time.Duration
	}{
		{nil, 0},
		{[]string{"NEXO_TWO_PHASE_DUPLICATE_CHECK_WAIT=5ms"}, 5 * time.Millisecond},
		{[]string{"NEXO_MYSQL_DSN=x", "NEXO_REDIS_ADDR=127.0.0.1:6379", "NEXO_JWT_SECRET=" + secret}, 10 * time.Millisecond},
	} {
		cfg, err := Load("", append([]string{}, tc.env...))
		if err != nil || cfg.TwoPhase.DuplicateCheckWait != tc.want {
			t.Errorf("%v: duplicate_check_wait = %v, %v; want %v", tc.env, cfg.TwoPhase.DuplicateCheckWait, err, tc.want)
		}
	}
}

// TestStreamNamesValidation: stream and group names are key-safe, and the
// three streams of a shard never share a key with each other or with the
// shard lease's.
func TestStreamNamesValidation(t *testing.T) {
	for _, tc := range []struct {
		name string
		set  func(*StreamNames)
		key  string // the key the error names; "" for none
	}{
		{"defaults", func(*StreamNames) {}, ""},
		{"renamed", func(n *StreamNames) { n.ToSave, n.SaveGroup = "save_v2", "savers" }, ""},
		{"empty", func(n *StreamNames) { n.Dead = "" }, "streams.names.dead"},
		{"colon", func(n *StreamNames) { n.ToDeliver = "a:b" }, "streams.names.to_deliver"},
		{"brace", func(n *StreamNames) { n.DeliverGroup = "{x}" }, "streams.names.deliver_group"},
		{"same stream twice", func(n *StreamNames) { n.Dead = n.ToSave }, "streams.names.to_save"},
		{"lease key", func(n *StreamNames) { n.ToSave = "owner" }, "streams.names.to_save"},
	} {
		c := Default()
		tc.set(&c.Streams.Names)
		err := c.Validate()
		if (err == nil) != (tc.key == "") {
			t.Errorf("%s: Validate() = %v", tc.name, err)
		}
		if err != nil && !strings.Contains(err.Error(), "config "+tc.key+" ("+EnvName(tc.key)+")") {
			t.Errorf("%s: error does not name %s: %v", tc.name, tc.key, err)
		}
	}
}
