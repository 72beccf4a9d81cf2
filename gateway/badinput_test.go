package gateway_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/cloudwego/hertz/pkg/app"
	"github.com/golang-jwt/jwt/v5"

	"github.com/nexo-im/nexo/domain"
	"github.com/nexo-im/nexo/gateway/api"
	"github.com/nexo-im/nexo/gateway/api/apitest"
	"github.com/nexo-im/nexo/gateway/wire"
	"github.com/nexo-im/nexo/store"
)

// snapshot is what a refused request must leave untouched: the users table
// and the token records.
type snapshot struct {
	users  []domain.User
	tokens map[string]string
}

func (e *env) snapshot(t *testing.T) snapshot {
	t.Helper()
	ctx := context.Background()
	var ids []string
	if err := e.db.Gorm.WithContext(ctx).Table("users").Order("id").Pluck("id", &ids).Error; err != nil {
		t.Fatal(err)
	}
	repo := store.NewUserRepo(e.db)
	s := snapshot{tokens: map[string]string{}}
	for _, id := range ids {
		u, err := repo.Get(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		s.users = append(s.users, u)
	}
	// The token record of every user on every platform, read by key: a SCAN
	// of the shared Redis (hundreds of thousands of keys from other tests)
	// took minutes on a busy machine.
	for _, u := range s.users {
		for p := domain.PlatformIOS; p <= domain.PlatformAdmin; p++ {
			key := e.keys.Token(u.ID, int(p))
			if v, err := e.rdb.Get(ctx, key).Result(); err == nil {
				s.tokens[key] = v
			}
		}
	}
	return s
}

func (s snapshot) equal(o snapshot) bool {
	return fmt.Sprint(s.users) == fmt.Sprint(o.users) && fmt.Sprint(s.tokens) == fmt.Sprint(o.tokens)
}

// TestBadInput sends every kind of bad request and checks each gets its
// documented reason, a detail naming the field, and writes nothing.
func TestBadInput(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	apitest.OK(t, e.do(t, "POST", "/user/register", `{"user_id":"alice","nickname":"Alice","password":"correct horse"}`, ""))
	tok := e.login(t, "alice", "correct horse", 5)
	key := []byte(testSecret)
	now := time.Now()
	handSigned := func(secret []byte, exp time.Time, jti string) string {
		s, err := jwt.NewWithClaims(jwt.SigningMethodHS256, jwt.MapClaims{
			"user_id": "alice", "platform_id": 5, "jti": jti, "iss": "nexo",
			"iat": exp.Add(-time.Hour).Unix(), "exp": exp.Unix(),
		}).SignedString(secret)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	// The active jti with a past exp: only the expiry can refuse it.
	activeJTI := e.rdb.Get(context.Background(), e.keys.Token("alice", 5)).Val()
	expired := handSigned(key, now.Add(-time.Second), activeJTI)
	forged := handSigned([]byte(strings.Repeat("x", 40)), now.Add(time.Hour), activeJTI)
	notActive := handSigned(key, now.Add(time.Hour), "not-the-active-jti")

	long := func(n int) string { return strings.Repeat("é", n) } // 2 bytes, 1 character
	reg := func(fields string) string { return "{" + fields + "}" }

	tests := []struct {
		name, method, path, body, token string
		reason                          wire.Reason
		field                           string
	}{
		// Register: body shape.
		{"register empty body", "POST", "/user/register", "", "", wire.ReasonBadRequest, "body"},
		{"register malformed", "POST", "/user/register", `{"nickname":"x",`, "", wire.ReasonBadRequest, "body"},
		{"register syntax error", "POST", "/user/register", `{"nickname" "x"}`, "", wire.ReasonBadRequest, "body"},
		{"register array", "POST", "/user/register", `[{"nickname":"x"}]`, "", wire.ReasonBadRequest, "body"},
		{"register null", "POST", "/user/register", `null`, "", wire.ReasonBadRequest, "body"},
		{"register trailing data", "POST", "/user/register", `{"nickname":"x","password":"plum-tart-9"} {}`, "", wire.ReasonBadRequest, "body"},
		{"register unknown field", "POST", "/user/register", `{"nick":"x","nickname":"x","password":"plum-tart-9"}`, "", wire.ReasonBadRequest, "nick"},
		{"register too long body", "POST", "/user/register", reg(`"nickname":"x","password":"plum-tart-9","avatar":"` + strings.Repeat("a", testMaxBody) + `"`), "", wire.ReasonBodyTooLong, ""},
		// Register: fields.
		{"register no nickname", "POST", "/user/register", `{"password":"plum-tart-9"}`, "", wire.ReasonBadRequest, "nickname"},
		{"register empty nickname", "POST", "/user/register", `{"nickname":"","password":"plum-tart-9"}`, "", wire.ReasonBadRequest, "nickname"},
		{"register no password", "POST", "/user/register", `{"nickname":"x"}`, "", wire.ReasonBadRequest, "password"},
		{"register short password", "POST", "/user/register", `{"nickname":"x","password":"1234567"}`, "", wire.ReasonBadRequest, "password"},
		{"register long password", "POST", "/user/register", reg(`"nickname":"x","password":"` + long(domain.MaxPasswordLen+1) + `"`), "", wire.ReasonBadRequest, "password"},
		{"register long nickname", "POST", "/user/register", reg(`"nickname":"` + long(domain.MaxNicknameLen+1) + `","password":"plum-tart-9"`), "", wire.ReasonBadRequest, "nickname"},
		{"register long avatar", "POST", "/user/register", reg(`"nickname":"x","password":"plum-tart-9","avatar":"` + long(domain.MaxAvatarLen+1) + `"`), "", wire.ReasonBadRequest, "avatar"},
		{"register bad user_id", "POST", "/user/register", `{"user_id":"a b","nickname":"x","password":"plum-tart-9"}`, "", wire.ReasonBadRequest, "user_id"},
		{"register long user_id", "POST", "/user/register", reg(`"user_id":"` + strings.Repeat("a", domain.MaxIDLen+1) + `","nickname":"x","password":"plum-tart-9"`), "", wire.ReasonBadRequest, "user_id"},
		{"register nickname number", "POST", "/user/register", `{"nickname":5,"password":"plum-tart-9"}`, "", wire.ReasonBadRequest, "nickname"},
		{"register password object", "POST", "/user/register", `{"nickname":"x","password":{"a":1}}`, "", wire.ReasonBadRequest, "password"},
		// Login.
		{"login no platform", "POST", "/auth/login", `{"user_id":"alice","password":"correct horse"}`, "", wire.ReasonBadRequest, "platform_id"},
		{"login platform 11", "POST", "/auth/login", `{"user_id":"alice","password":"correct horse","platform_id":11}`, "", wire.ReasonBadRequest, "platform_id"},
		{"login platform string", "POST", "/auth/login", `{"user_id":"alice","password":"correct horse","platform_id":"5"}`, "", wire.ReasonBadRequest, "platform_id"},
		{"login platform float", "POST", "/auth/login", `{"user_id":"alice","password":"correct horse","platform_id":5.5}`, "", wire.ReasonBadRequest, "platform_id"},
		{"login platform huge", "POST", "/auth/login", `{"user_id":"alice","password":"correct horse","platform_id":1e30}`, "", wire.ReasonBadRequest, "platform_id"},
		{"login no user", "POST", "/auth/login", `{"password":"correct horse","platform_id":5}`, "", wire.ReasonBadRequest, "user_id"},
		{"login no password", "POST", "/auth/login", `{"user_id":"alice","platform_id":5}`, "", wire.ReasonBadRequest, "password"},
		{"login password number", "POST", "/auth/login", `{"user_id":"alice","password":12345678,"platform_id":5}`, "", wire.ReasonBadRequest, "password"},
		{"login malformed", "POST", "/auth/login", `{"user_id":"alice"`, "", wire.ReasonBadRequest, "body"},
		{"login wrong password", "POST", "/auth/login", `{"user_id":"alice","password":"correct horsE","platform_id":5}`, "", wire.ReasonBadCredentials, ""},
		// Update.
		{"update nothing", "PUT", "/user/update", `{}`, tok.Token, wire.ReasonBadRequest, "nickname"},
		{"update nulls", "PUT", "/user/update", `{"nickname":null,"avatar":null}`, tok.Token, wire.ReasonBadRequest, "nickname"},
		{"update empty nickname", "PUT", "/user/update", `{"nickname":""}`, tok.Token, wire.ReasonBadRequest, "nickname"},
		{"update long nickname", "PUT", "/user/update", reg(`"nickname":"` + long(domain.MaxNicknameLen+1) + `"`), tok.Token, wire.ReasonBadRequest, "nickname"},
		{"update long avatar", "PUT", "/user/update", reg(`"nickname":"ok","avatar":"` + long(domain.MaxAvatarLen+1) + `"`), tok.Token, wire.ReasonBadRequest, "avatar"},
		{"update avatar number", "PUT", "/user/update", `{"avatar":1}`, tok.Token, wire.ReasonBadRequest, "avatar"},
		{"update malformed", "PUT", "/user/update", `{"nickname":"x"`, tok.Token, wire.ReasonBadRequest, "body"},
		{"update unknown field", "PUT", "/user/update", `{"password":"plum-tart-9"}`, tok.Token, wire.ReasonBadRequest, "password"},
		// Tokens, on every authenticated route.
		{"update no token", "PUT", "/user/update", `{"nickname":"x"}`, "", wire.ReasonTokenMissing, ""},
		{"update forged token", "PUT", "/user/update", `{"nickname":"x"}`, forged, wire.ReasonTokenInvalid, ""},
		{"update expired token", "PUT", "/user/update", `{"nickname":"x"}`, expired, wire.ReasonTokenExpired, ""},
		{"update inactive token", "PUT", "/user/update", `{"nickname":"x"}`, notActive, wire.ReasonTokenRevoked, ""},
		{"info garbage token", "GET", "/user/info", "", "abc.def.ghi", wire.ReasonTokenInvalid, ""},
		{"info expired token", "GET", "/user/info", "", expired, wire.ReasonTokenExpired, ""},
		{"refresh no token", "POST", "/auth/refresh", "", "", wire.ReasonTokenMissing, ""},
		{"refresh expired token", "POST", "/auth/refresh", "", expired, wire.ReasonTokenExpired, ""},
		{"refresh inactive token", "POST", "/auth/refresh", "", notActive, wire.ReasonTokenRevoked, ""},
		{"logout forged token", "POST", "/auth/logout", "", forged, wire.ReasonTokenInvalid, ""},
		{"logout expired token", "POST", "/auth/logout", "", expired, wire.ReasonTokenExpired, ""},
		{"logout inactive token", "POST", "/auth/logout", "", notActive, wire.ReasonTokenRevoked, ""},
		// Routing.
		{"unknown route", "GET", "/nope", "", "", wire.ReasonNotFound, "/nope"},
		{"wrong method", "GET", "/auth/login", "", "", wire.ReasonNotFound, "/auth/login"},
		{"trailing slash", "POST", "/user/register/", `{"nickname":"x","password":"plum-tart-9"}`, "", wire.ReasonNotFound, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			before := e.snapshot(t)
			r := e.do(t, tc.method, tc.path, tc.body, tc.token)
			apitest.Err(t, r, tc.reason, tc.field)
			if after := e.snapshot(t); !before.equal(after) {
				t.Fatalf("a refused request wrote something:\nbefore %+v\nafter  %+v", before, after)
			}
		})
	}
	if calls := e.logout.get(); len(calls) != 0 {
		t.Fatalf("OnLogout called by refused logouts: %v", calls)
	}
	// The good token survived all of it.
	apitest.OK(t, e.do(t, "GET", "/user/info", "", tok.Token))
}

// TestPanicIsInternalError: a panicking handler answers 500 internal_error
// in the envelope and the server keeps serving.
func TestPanicIsInternalError(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.srv.Route("GET", "/boom", func(context.Context, *app.RequestContext) { panic("boom") }, false)
	r := e.do(t, "GET", "/boom", "", "")
	apitest.Err(t, r, wire.ReasonInternalError, "")
	if strings.Contains(r.Raw, "boom") {
		t.Fatalf("panic value reached the client: %s", r.Raw)
	}
	apitest.OK(t, e.do(t, "GET", "/healthz", "", ""))
}

// TestRouteAuthenticated: routes added by other packages get the same auth.
func TestRouteAuthenticated(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.srv.Route("GET", "/whoami", func(ctx context.Context, c *app.RequestContext) {
		claims, _ := authClaims(c)
		api.WriteOK(c, claims)
	}, true)
	apitest.Err(t, e.do(t, "GET", "/whoami", "", ""), wire.ReasonTokenMissing, "")
	apitest.OK(t, e.do(t, "POST", "/user/register", `{"user_id":"zoe","nickname":"Z","password":"plum-tart-9"}`, ""))
	tok := e.login(t, "zoe", "plum-tart-9", 7)
	r := e.do(t, "GET", "/whoami", "", tok.Token)
	apitest.OK(t, r)
	if !strings.Contains(string(r.Data), `"zoe"`) {
		t.Fatalf("claims %s", r.Data)
	}
}
