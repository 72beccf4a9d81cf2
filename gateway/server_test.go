package gateway_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cloudwego/hertz/pkg/app"
	"github.com/cloudwego/hertz/pkg/common/hlog"
	"github.com/redis/go-redis/v9"
	"golang.org/x/crypto/bcrypt"

	"github.com/nexo-im/nexo/configs"
	"github.com/nexo-im/nexo/gateway"
	"github.com/nexo-im/nexo/gateway/api/apitest"
	"github.com/nexo-im/nexo/gateway/auth"
	"github.com/nexo-im/nexo/gateway/routes"
	"github.com/nexo-im/nexo/gateway/wire"
	"github.com/nexo-im/nexo/services/account"
	"github.com/nexo-im/nexo/store"
	"github.com/nexo-im/nexo/store/storetest"
)

func TestMain(m *testing.M) {
	// Hertz's logger is process-wide; set it once, before any server.
	hlog.SetLogger(gateway.HertzLogger(slog.New(slog.DiscardHandler)))
	os.Exit(m.Run())
}

const (
	testSecret  = "test-secret-0123456789abcdef0123456789"
	testMaxBody = 4096
)

func testConfig() configs.Config {
	cfg := configs.Default()
	cfg.HTTP.MaxBodyBytes = testMaxBody
	cfg.HTTP.ShutdownTimeout = 5 * time.Second
	cfg.JWT.Secret = testSecret
	return cfg
}

// env is a test server on a fresh MariaDB database and a Redis key prefix.
type env struct {
	srv    *gateway.Server
	db     *store.DB
	rdb    redis.UniversalClient
	keys   store.Keys
	logout *logoutRecorder
}

type logoutRecorder struct {
	mu    sync.Mutex
	calls []string
}

// Disconnect records a call of account.Sessions.
func (r *logoutRecorder) Disconnect(user string, platform int, jti string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls = append(r.calls, fmt.Sprintf("%s/%d/%s", user, platform, jti))
}

func (r *logoutRecorder) get() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.calls...)
}

// newEnv builds the server as cmd/app does, with the account routes, on
// real MariaDB and Redis.
func newEnv(t testing.TB, extra ...func(*gateway.Deps)) *env {
	t.Helper()
	db := storetest.MySQL(t)
	rdb, prefix := storetest.Redis(t)
	e := &env{db: db, rdb: rdb, keys: store.Keys{Prefix: prefix}, logout: &logoutRecorder{}}
	e.srv = newServer(t, testConfig(), db, rdb, e.keys, e.logout, extra...)
	return e
}

func newServer(t testing.TB, cfg configs.Config, db *store.DB, rdb redis.UniversalClient, keys store.Keys,
	sessions account.Sessions, extra ...func(*gateway.Deps)) *gateway.Server {
	t.Helper()
	tokens := store.NewTokens(rdb, keys)
	issuer, err := auth.NewIssuer(cfg.JWT, tokens)
	if err != nil {
		t.Fatal(err)
	}
	verifier, err := auth.NewVerifier(cfg.JWT, tokens)
	if err != nil {
		t.Fatal(err)
	}
	passwords, err := auth.NewPasswords(bcrypt.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	deps := gateway.Deps{
		HTTP: cfg.HTTP, Logger: slog.New(slog.DiscardHandler), Verifier: verifier,
		Ready: []gateway.ReadyCheck{
			{Name: "database", Check: db.Ping},
			{Name: "redis", Check: func(ctx context.Context) error { return rdb.Ping(ctx).Err() }},
		},
	}
	for _, f := range extra {
		f(&deps)
	}
	srv, err := gateway.NewServer(deps)
	if err != nil {
		t.Fatal(err)
	}
	accounts := account.NewService(account.Deps{Users: store.NewUserRepo(db), Contacts: store.NewContacts(db), Passwords: passwords,
		Tokens: auth.AccountTokens{Issuer: issuer}, Store: tokens, Sessions: sessions, Auth: cfg.Auth})
	routes.Account(srv, accounts, cfg.HTTP.MaxBodyBytes, deps.Logger)
	return srv
}

// response is a decoded envelope.
type response = apitest.Answer

// do performs a request in-process; token "" sends none.
func (e *env) do(t *testing.T, method, path, body, token string) response {
	t.Helper()
	return perform(t, e.srv, method, path, body, token)
}

func perform(t *testing.T, srv *gateway.Server, method, path, body, token string) response {
	t.Helper()
	return apitest.Do(t, srv.Hertz().Engine, method, path, body, token)
}

func authClaims(c *app.RequestContext) (string, bool) {
	claims, ok := auth.ClaimsOf(c)
	return claims.UserID, ok
}

type tokenData struct {
	Token    string `json:"token"`
	ExpireAt int64  `json:"expire_at"`
}

func (e *env) login(t *testing.T, user, password string, platform int) tokenData {
	t.Helper()
	r := e.do(t, "POST", "/auth/login", fmt.Sprintf(`{"user_id":%q,"password":%q,"platform_id":%d}`, user, password, platform), "")
	apitest.OK(t, r)
	var tok tokenData
	r.Decode(t, &tok)
	return tok
}

func TestHealth(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	apitest.OK(t, e.do(t, "GET", "/healthz", "", ""))
	apitest.OK(t, e.do(t, "GET", "/readyz", "", ""))
}

func TestReadyzNamesWhatFailed(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	down := newServer(t, testConfig(), e.db, e.rdb, e.keys, e.logout, func(d *gateway.Deps) {
		d.Ready = append(d.Ready, gateway.ReadyCheck{Name: "redis-replica", Check: func(context.Context) error { return fmt.Errorf("dial tcp: refused") }})
	})
	r := perform(t, down, "GET", "/readyz", "", "")
	apitest.Err(t, r, wire.ReasonServerBusy, "redis-replica")
	if strings.Contains(r.Detail(), "refused") || strings.Contains(r.Detail(), "database") {
		t.Fatalf("detail %q: must name only the failed dependency, without its error", r.Detail())
	}
	apitest.OK(t, perform(t, down, "GET", "/healthz", "", ""))
}
