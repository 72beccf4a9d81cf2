package routes_test

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"sync"
	"testing"
	"time"

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

const (
	accountSecret  = "test-secret-0123456789abcdef0123456789"
	accountMaxBody = 4096
)

// quietHertz silences Hertz's process-wide logger once, before the first
// server of these tests starts.
var quietHertz sync.Once

// accountEnv is the gateway server with the account routes, on a fresh
// MariaDB database and Redis key prefix, wired as cmd/app wires it.
type accountEnv struct {
	srv    *gateway.Server
	db     *store.DB
	rdb    redis.UniversalClient
	keys   store.Keys
	logout *sessionRecorder
}

// accountWiring is what a test may change before the server is built.
type accountWiring struct {
	gw     gateway.Deps
	acct   account.Deps
	tokens *store.Tokens
}

// sessionRecorder is the account service's Sessions: it records every
// Disconnect as "user/platform/jti".
type sessionRecorder struct {
	mu    sync.Mutex
	calls []string
}

// Disconnect records a call.
func (r *sessionRecorder) Disconnect(user string, platform int, jti string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls = append(r.calls, fmt.Sprintf("%s/%d/%s", user, platform, jti))
}

func (r *sessionRecorder) get() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.calls...)
}

func newAccountEnv(t testing.TB, extra ...func(*accountWiring)) *accountEnv {
	t.Helper()
	quietHertz.Do(func() { hlog.SetLogger(gateway.HertzLogger(slog.New(slog.DiscardHandler))) })
	db := storetest.MySQL(t)
	rdb, prefix := storetest.Redis(t)
	e := &accountEnv{db: db, rdb: rdb, keys: store.Keys{Prefix: prefix}, logout: &sessionRecorder{}}

	cfg := configs.Default()
	cfg.HTTP.MaxBodyBytes = accountMaxBody
	cfg.HTTP.ShutdownTimeout = 5 * time.Second
	cfg.JWT.Secret = accountSecret
	tokens := store.NewTokens(rdb, e.keys)
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
	w := accountWiring{
		gw: gateway.Deps{HTTP: cfg.HTTP, Logger: slog.New(slog.DiscardHandler), Verifier: verifier},
		acct: account.Deps{Users: store.NewUserRepo(db), Contacts: store.NewContacts(db), Passwords: passwords, Tokens: auth.AccountTokens{Issuer: issuer},
			Store: tokens, Sessions: e.logout, Auth: cfg.Auth},
		tokens: tokens,
	}
	for _, f := range extra {
		f(&w)
	}
	if e.srv, err = gateway.NewServer(w.gw); err != nil {
		t.Fatal(err)
	}
	routes.Account(e.srv, account.NewService(w.acct), cfg.HTTP.MaxBodyBytes, w.gw.Logger)
	return e
}

// answer is a decoded envelope.
type answer = apitest.Answer

// do performs a request in-process; token "" sends none.
func (e *accountEnv) do(t *testing.T, method, path, body, token string) answer {
	t.Helper()
	return apitest.Do(t, e.srv.Hertz().Engine, method, path, body, token)
}

// withoutRequestID is an error envelope with its (per-request) request_id
// dropped, for comparing two answers.
func withoutRequestID(r answer) string {
	var d wire.ErrorData
	_ = json.Unmarshal(r.Data, &d)
	d.RequestID = ""
	b, _ := json.Marshal(d)
	return fmt.Sprintf("%d %d %s %s", r.Status, r.ErrCode, r.ErrMsg, b)
}

type tokenAnswer struct {
	Token    string `json:"token"`
	ExpireAt int64  `json:"expire_at"`
}

func (e *accountEnv) login(t *testing.T, user, password string, platform int) tokenAnswer {
	t.Helper()
	r := e.do(t, "POST", "/auth/login", fmt.Sprintf(`{"user_id":%q,"password":%q,"platform_id":%d}`, user, password, platform), "")
	apitest.OK(t, r)
	var tok tokenAnswer
	r.Decode(t, &tok)
	return tok
}
