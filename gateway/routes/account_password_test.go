package routes_test

import (
	"context"
	"log/slog"
	"slices"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/nexo-im/nexo/configs"
	"github.com/nexo-im/nexo/gateway/api/apitest"
	"github.com/nexo-im/nexo/gateway/auth"
	"github.com/nexo-im/nexo/gateway/wire"
	"github.com/nexo-im/nexo/store"
)

// TestCommonPasswordsRefused: registration refuses the most common
// passwords, in any letter case.
func TestCommonPasswordsRefused(t *testing.T) {
	t.Parallel()
	e := newAccountEnv(t)
	for _, pw := range []string{"12345678", "password1", "Password1", "iloveyou"} {
		apitest.Err(t, e.do(t, "POST", "/user/register", `{"user_id":"c1","nickname":"C","password":"`+pw+`"}`, ""), wire.ReasonBadRequest, "password")
	}
	apitest.OK(t, e.do(t, "POST", "/user/register", `{"user_id":"c1","nickname":"C","password":"plum-tart-9"}`, ""))
}

// TestPasswordChangeAndLogoutAll: POST /user/password needs the old
// password, refuses a weak new one, and revokes every other token (the
// caller's stays); POST /auth/logout_all revokes them all. OnLogout hears
// of every revoked token (logout_all: of the whole user), so live sessions
// close.
func TestPasswordChangeAndLogoutAll(t *testing.T) {
	t.Parallel()
	e := newAccountEnv(t)
	apitest.OK(t, e.do(t, "POST", "/user/register", `{"user_id":"pat","nickname":"P","password":"old-secret-1"}`, ""))
	web := e.login(t, "pat", "old-secret-1", 5)
	ios := e.login(t, "pat", "old-secret-1", 1)
	android := e.login(t, "pat", "old-secret-1", 2)

	apitest.Err(t, e.do(t, "POST", "/user/password", `{"old_password":"wrong-secret","new_password":"new-secret-2"}`, web.Token), wire.ReasonBadCredentials, "")
	apitest.Err(t, e.do(t, "POST", "/user/password", `{"old_password":"old-secret-1","new_password":"12345678"}`, web.Token), wire.ReasonBadRequest, "new_password")
	apitest.Err(t, e.do(t, "POST", "/user/password", `{"old_password":"old-secret-1","new_password":"old-secret-1"}`, web.Token), wire.ReasonBadRequest, "new_password")
	apitest.Err(t, e.do(t, "POST", "/user/password", `{"old_password":"old-secret-1"}`, web.Token), wire.ReasonBadRequest, "new_password")
	for _, tok := range []string{web.Token, ios.Token, android.Token} {
		apitest.OK(t, e.do(t, "GET", "/user/info", "", tok)) // nothing refused changed anything
	}

	jti := func(platform int) string { return e.rdb.Get(context.Background(), e.keys.Token("pat", platform)).Val() }
	iosJTI, androidJTI := jti(1), jti(2)
	r := e.do(t, "POST", "/user/password", `{"old_password":"old-secret-1","new_password":"new-secret-2"}`, web.Token)
	apitest.OK(t, r)
	var n struct{ Revoked int }
	r.Decode(t, &n)
	if n.Revoked != 2 {
		t.Fatalf("revoked %d tokens, want 2", n.Revoked)
	}
	apitest.OK(t, e.do(t, "GET", "/user/info", "", web.Token))
	apitest.Err(t, e.do(t, "GET", "/user/info", "", ios.Token), wire.ReasonTokenRevoked, "")
	apitest.Err(t, e.do(t, "GET", "/user/info", "", android.Token), wire.ReasonTokenRevoked, "")
	// Every other platform's sessions end (whatever their token); none of
	// the caller's platform (5).
	if iosJTI == "" || androidJTI == "" {
		t.Fatal("no jti recorded before the change")
	}
	calls := e.logout.get()
	slices.Sort(calls)
	if want := []string{"pat/1/", "pat/10/", "pat/2/", "pat/3/", "pat/4/", "pat/6/", "pat/7/", "pat/8/", "pat/9/"}; !slices.Equal(calls, want) {
		t.Fatalf("OnLogout calls %v, want %v", calls, want)
	}
	apitest.Err(t, e.do(t, "POST", "/auth/login", `{"user_id":"pat","password":"old-secret-1","platform_id":1}`, ""), wire.ReasonBadCredentials, "")
	ios = e.login(t, "pat", "new-secret-2", 1)

	// Log out everywhere: the presented token too.
	r = e.do(t, "POST", "/auth/logout_all", "", ios.Token)
	apitest.OK(t, r)
	r.Decode(t, &n)
	if n.Revoked != 2 {
		t.Fatalf("logout_all revoked %d tokens, want 2 (web and ios)", n.Revoked)
	}
	for _, tok := range []string{web.Token, ios.Token} {
		apitest.Err(t, e.do(t, "GET", "/user/info", "", tok), wire.ReasonTokenRevoked, "")
	}
	// One call that closes every session of the user, both token kinds.
	if calls := e.logout.get(); len(calls) != 10 || calls[9] != "pat/0/" {
		t.Fatalf("OnLogout calls %v, want the nine of the password change and pat/0/", calls)
	}
}

// TestRegisterReservedAndCaseVariants: "all" and the other reserved IDs
// cannot register in any letter case, and an ID that differs from a
// registered one only in case is user_exists.
func TestRegisterReservedAndCaseVariants(t *testing.T) {
	t.Parallel()
	e := newAccountEnv(t)
	for _, id := range []string{"all", "ALL", "everyone", "System", "admin"} {
		apitest.Err(t, e.do(t, "POST", "/user/register", `{"user_id":"`+id+`","nickname":"X","password":"plum-tart-9"}`, ""), wire.ReasonBadRequest, "user_id")
	}
	apitest.OK(t, e.do(t, "POST", "/user/register", `{"user_id":"Alice","nickname":"A","password":"plum-tart-9"}`, ""))
	for _, id := range []string{"alice", "ALICE"} {
		apitest.Err(t, e.do(t, "POST", "/user/register", `{"user_id":"`+id+`","nickname":"A","password":"plum-tart-9"}`, ""), wire.ReasonUserExists, "")
	}
	// Stored as given: logging in takes the exact ID.
	e.login(t, "Alice", "plum-tart-9", 5)
	apitest.Err(t, e.do(t, "POST", "/auth/login", `{"user_id":"alice","password":"plum-tart-9","platform_id":5}`, ""), wire.ReasonBadCredentials, "")
}

// TestRevokeAllCutsExternalTokens: a password change and "log out
// everywhere" also cut tokens the app signed (auth.external_jwt, HS256
// here), on HTTP and in the WebSocket checks (handshake and periodic), as
// the server API's revoke does. A password change made with
// an app-signed token keeps that token and no other, Nexo's included.
func TestRevokeAllCutsExternalTokens(t *testing.T) {
	t.Parallel()
	const extSecret = "app-secret-0123456789abcdef0123456789"
	var verifier *auth.Verifier
	e := newAccountEnv(t, func(w *accountWiring) {
		cfg := configs.Default().Auth.ExternalJWT
		cfg.Enabled, cfg.Secret = true, extSecret
		ext, err := auth.NewExternal(context.Background(), cfg, w.tokens, nil, slog.New(slog.DiscardHandler))
		if err != nil {
			t.Fatal(err)
		}
		w.gw.Verifier.UseExternal(ext)
		verifier = w.gw.Verifier
	})
	tokens := store.NewTokens(e.rdb, e.keys)
	ctx := context.Background()
	n := 0
	// appToken signs a token as the app's backend would; iat is offset
	// from now (the floor has whole seconds; the leeway allows a little
	// of the future).
	appToken := func(user string, platform int, iat time.Duration) string {
		t.Helper()
		n++
		now := time.Now()
		s, err := jwt.NewWithClaims(jwt.SigningMethodHS256, jwt.MapClaims{
			"sub": user, "platform_id": platform, "nonce": n,
			"iat": now.Add(iat).Unix(), "exp": now.Add(time.Hour).Unix(),
		}).SignedString([]byte(extSecret))
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	// wsCheck is what a WebSocket session meets: the handshake, then the
	// periodic check of the session's jti; both must agree.
	checker := auth.SessionChecker{Tokens: tokens, Floors: tokens}
	wsCheck := func(tok string, c auth.Claims) bool {
		t.Helper()
		_, _, _, _, err := verifier.Authenticate(ctx, tok)
		active, cerr := checker.IsActive(ctx, c.UserID, c.PlatformID, c.JTI)
		if cerr != nil {
			t.Fatal(cerr)
		}
		if (err == nil) != active {
			t.Fatalf("handshake err %v but periodic check active=%v", err, active)
		}
		return active
	}
	claimsOf := func(tok string) auth.Claims {
		t.Helper()
		c, err := verifier.Verify(ctx, tok)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	register := func(user string) {
		t.Helper()
		apitest.OK(t, e.do(t, "POST", "/user/register", `{"user_id":"`+user+`","nickname":"E","password":"old-secret-1"}`, ""))
	}
	const change = `{"old_password":"old-secret-1","new_password":"new-secret-2"}`

	// Password change with app-signed token a: a stays; b and Nexo's go.
	register("ext1")
	web := e.login(t, "ext1", "old-secret-1", 5)
	a, b := appToken("ext1", 1, -10*time.Second), appToken("ext1", 1, -10*time.Second)
	aClaims, bClaims := claimsOf(a), claimsOf(b)
	for _, tok := range []string{a, b, web.Token} {
		apitest.OK(t, e.do(t, "GET", "/user/info", "", tok))
	}
	apitest.OK(t, e.do(t, "POST", "/user/password", change, a))
	apitest.OK(t, e.do(t, "GET", "/user/info", "", a))
	apitest.Err(t, e.do(t, "GET", "/user/info", "", b), wire.ReasonTokenRevoked, "")
	apitest.Err(t, e.do(t, "GET", "/user/info", "", web.Token), wire.ReasonTokenRevoked, "")
	if !wsCheck(a, aClaims) || wsCheck(b, bClaims) {
		t.Fatal("WebSocket checks: a must pass and b fail after a's password change")
	}
	// Sessions close at once on every platform but a's (1): Nexo's web
	// session (5) among them.
	calls := e.logout.get()
	if !slices.Contains(calls, "ext1/5/") || slices.Contains(calls, "ext1/1/") {
		t.Fatalf("OnLogout calls %v, want every platform of ext1 but 1", calls)
	}

	// Password change with Nexo's token: every app-signed token goes.
	register("ext2")
	web = e.login(t, "ext2", "old-secret-1", 5)
	c := appToken("ext2", 1, -10*time.Second)
	cClaims := claimsOf(c)
	apitest.OK(t, e.do(t, "POST", "/user/password", change, web.Token))
	apitest.OK(t, e.do(t, "GET", "/user/info", "", web.Token))
	apitest.Err(t, e.do(t, "GET", "/user/info", "", c), wire.ReasonTokenRevoked, "")
	if wsCheck(c, cClaims) {
		t.Fatal("WebSocket checks: c must fail after the change")
	}

	// Log out everywhere with an app-signed token: it, the user's other
	// app-signed tokens and Nexo's go; every session of the user closes.
	register("ext3")
	web = e.login(t, "ext3", "old-secret-1", 5)
	d, f := appToken("ext3", 2, -10*time.Second), appToken("ext3", 3, -10*time.Second)
	dClaims := claimsOf(d)
	apitest.OK(t, e.do(t, "POST", "/auth/logout_all", "", d))
	for _, tok := range []string{d, f, web.Token} {
		apitest.Err(t, e.do(t, "GET", "/user/info", "", tok), wire.ReasonTokenRevoked, "")
	}
	if wsCheck(d, dClaims) {
		t.Fatal("WebSocket checks: d must fail after logout_all")
	}
	if calls := e.logout.get(); len(calls) == 0 || calls[len(calls)-1] != "ext3/0/" {
		t.Fatalf("OnLogout calls %v, want the last to close every session of ext3 (ext3/0/)", calls)
	}
	// A token the app signs after the revocation works.
	apitest.OK(t, e.do(t, "GET", "/user/info", "", appToken("ext3", 1, 2*time.Second)))
}
