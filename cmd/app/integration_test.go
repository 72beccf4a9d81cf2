package app

import (
	"crypto/rand"
	"crypto/rsa"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lestrrat-go/jwx/v3/jwa"
	"github.com/lestrrat-go/jwx/v3/jwk"
	"github.com/lestrrat-go/jwx/v3/jwt"

	"github.com/nexo-im/nexo/configs"
)

const apiKey = "test-server-api-key-0123456789"

// serverAPI calls the server API with the test key.
func serverAPI(t *testing.T, method, url, body string) (int, map[string]any) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "apikey "+apiKey)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	var env map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&env); err != nil {
		t.Fatalf("%s %s: %d, not an envelope: %v", method, url, resp.StatusCode, err)
	}
	return resp.StatusCode, env
}

func mustAPI(t *testing.T, method, url, body string) map[string]any {
	t.Helper()
	code, env := serverAPI(t, method, url, body)
	if code != 200 {
		t.Fatalf("%s %s %s: %d %v", method, url, body, code, env)
	}
	d, _ := env["data"].(map[string]any)
	return d
}

func apiConfig(t *testing.T) configs.Config {
	cfg := realConfig(t)
	cfg.ServerAPI.Keys = []string{"old-key-still-valid-0123", apiKey}
	return cfg
}

// TestServerAPIEndToEnd: an app backend creates users and issues their
// tokens; registration is closed; messages and notifications go as any
// user or the system; groups are made on a user's behalf; presence and
// typing reach who may see them; a disabled user is cut off in under 1 s.
func TestServerAPIEndToEnd(t *testing.T) {
	t.Parallel()
	base, _, _ := startApp(t, apiConfig(t))

	if code, env := call(t, "POST", base+"/user/register", `{"user_id":"x","nickname":"x","password":"plum-tart-9"}`, ""); code != 403 || env["err_msg"] != "forbidden" {
		t.Fatalf("register with the server API on: %d %v", code, env)
	}
	if code, env := call(t, "POST", base+"/api/user/create", `{"user_id":"x","nickname":"x"}`, ""); code != 401 || env["err_msg"] != "unauthorized" {
		t.Fatalf("no api key: %d %v", code, env)
	}
	req, _ := http.NewRequest("POST", base+"/api/user/create", strings.NewReader(`{"user_id":"x","nickname":"x"}`))
	req.Header.Set("Authorization", "apikey wrong-key-0123456789abcdef")
	req.Header.Set("Content-Type", "application/json")
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != 401 {
		t.Fatalf("wrong api key: %v %v", resp, err)
	}

	for _, u := range []string{"alice", "bob", "carol"} {
		if d := mustAPI(t, "POST", base+"/api/user/create", fmt.Sprintf(`{"user_id":%q,"nickname":"Nick %s"}`, u, u)); d["user_id"] != u || d["disabled"] != false {
			t.Fatalf("create %s: %v", u, d)
		}
	}
	if code, env := serverAPI(t, "POST", base+"/api/user/create", `{"user_id":"alice","nickname":"again"}`); code != 409 || env["err_msg"] != "user_exists" {
		t.Fatalf("create twice: %d %v", code, env)
	}
	if d := mustAPI(t, "POST", base+"/api/user/update", `{"user_id":"carol","nickname":"Caroline"}`); d["nickname"] != "Caroline" {
		t.Fatalf("update: %v", d)
	}
	token := func(u string) string {
		return fmt.Sprint(mustAPI(t, "POST", base+"/api/token", fmt.Sprintf(`{"user_id":%q,"platform_id":5}`, u))["token"])
	}
	aliceTok, bobTok := token("alice"), token("bob")
	alice, bob := dial(t, base, "alice", aliceTok), dial(t, base, "bob", bobTok)

	// A message as bob and a notification as the system, through the pipeline.
	ack := mustAPI(t, "POST", base+"/api/msg/send", `{"send_id":"bob","session_type":1,"recv_id":"alice","msg_type":101,"content":{"text":"from the backend"}}`)
	if ack["seq"] != 1.0 {
		t.Fatalf("api send ack: %v", ack)
	}
	mustAPI(t, "POST", base+"/api/msg/send_notification", `{"session_type":1,"recv_id":"alice","text":"your order shipped"}`)
	alice.waitPushes(2001, "the message and the notification", func(f []frame) bool {
		var texts []string
		for _, fr := range f {
			c, _ := fr.field("content").(map[string]any)
			texts = append(texts, fmt.Sprint(fr.field("sender_id"), ":", c["text"], ":", fr.field("msg_type")))
		}
		j := strings.Join(texts, "|")
		return strings.Contains(j, "bob:from the backend:101") && strings.Contains(j, "system:your order shipped:1400")
	})

	// A group on alice's behalf.
	g := mustAPI(t, "POST", base+"/api/group/create", `{"op_user_id":"alice","name":"team","member_ids":["bob","carol"]}`)
	if g["owner_user_id"] != "alice" {
		t.Fatalf("group create: %v", g)
	}

	// Presence: the API sees anyone; a user sees who shares a conversation.
	p := mustAPI(t, "GET", base+"/api/presence?user_ids=alice,carol", "")
	list, _ := p["presence"].([]any)
	if len(list) != 2 || list[0].(map[string]any)["online"] != true || fmt.Sprint(list[0].(map[string]any)["platforms"]) != "[5]" ||
		list[1].(map[string]any)["online"] != false {
		t.Fatalf("api presence: %v", p)
	}
	mustAPI(t, "POST", base+"/api/user/create", `{"user_id":"stranger","nickname":"s","group_invites":"nobody"}`)
	code, env := call(t, "GET", base+"/user/presence?user_ids=bob,stranger", "", aliceTok)
	plist, _ := envData(env)["presence"].([]any)
	if code != 200 || len(plist) != 1 || plist[0].(map[string]any)["user_id"] != "bob" || plist[0].(map[string]any)["online"] != true {
		t.Fatalf("user presence: %d %v", code, env)
	}
	// group_invites through the server API: the stranger's choice is kept
	// and holds for the app's backend too; /user/info shows alice bob (a
	// shared group), not the stranger.
	if d := mustAPI(t, "GET", base+"/api/user/get?user_id=stranger", ""); d["group_invites"] != "nobody" {
		t.Fatalf("api get: %v", d)
	}
	if code, env := serverAPI(t, "POST", base+"/api/group/invite", fmt.Sprintf(`{"op_user_id":"alice","group_id":%q,"user_ids":["stranger"]}`, g["group_id"])); code != 403 || env["err_msg"] != "blocked" {
		t.Fatalf("inviting a user who accepts nobody: %d %v", code, env)
	}
	if d := mustAPI(t, "POST", base+"/api/user/update", `{"user_id":"stranger","group_invites":"everyone"}`); d["group_invites"] != "everyone" {
		t.Fatalf("api update: %v", d)
	}
	mustAPI(t, "POST", base+"/api/group/invite", fmt.Sprintf(`{"op_user_id":"alice","group_id":%q,"user_ids":["stranger"]}`, g["group_id"]))
	if code, env := call(t, "GET", base+"/user/info?user_id=bob", "", aliceTok); code != 200 || envData(env)["nickname"] != "Nick bob" {
		t.Fatalf("alice reads bob's profile: %d %v", code, env)
	}

	// Typing reaches the other member and is never stored.
	conv := "si_alice_bob"
	if r := alice.request(1103, map[string]any{"conversation_id": conv, "typing": true}); r.ErrCode != 0 {
		t.Fatalf("typing: %+v %s", r, r.Data)
	}
	got := bob.waitPushes(2103, "typing", func(f []frame) bool { return len(f) >= 1 })
	if got[0].field("user_id") != "alice" || got[0].field("typing") != true || got[0].field("conversation_id") != conv {
		t.Fatalf("typing push: %s", got[0].Data)
	}
	if r := alice.request(1103, map[string]any{"conversation_id": "si_bob_carol", "typing": true}); r.ErrMsg != "not_conversation_member" {
		t.Fatalf("typing elsewhere: %+v", r)
	}
	if msgs := pullAll(t, base, aliceTok, conv); len(msgs) != 1 {
		t.Fatalf("typing was stored: %v", msgs)
	}

	// Disable bob: his session ends and his token is refused, within 1 s.
	began := time.Now()
	mustAPI(t, "POST", base+"/api/user/disable", `{"user_id":"bob"}`)
	select {
	case <-bob.closed:
	case <-time.After(time.Second):
		t.Fatal("bob's session outlived his disable by 1 s")
	}
	if code, env := call(t, "GET", base+"/user/info", "", bobTok); code != 401 || env["err_msg"] != "token_revoked" {
		t.Fatalf("disabled user's token: %d %v", code, env)
	}
	t.Logf("disabled user cut off after %v", time.Since(began))
	if code, env := serverAPI(t, "POST", base+"/api/token", `{"user_id":"bob","platform_id":5}`); code != 403 || env["err_msg"] != "user_disabled" {
		t.Fatalf("token for a disabled user: %d %v", code, env)
	}
	mustAPI(t, "POST", base+"/api/user/enable", `{"user_id":"bob"}`)
	if code, _ := call(t, "GET", base+"/user/info", "", token("bob")); code != 200 {
		t.Fatalf("re-enabled user: %d", code)
	}

	// Revoke and delete.
	mustAPI(t, "POST", base+"/api/token/revoke", `{"user_id":"alice"}`)
	if code, env := call(t, "GET", base+"/user/info", "", aliceTok); code != 401 || env["err_msg"] != "token_revoked" {
		t.Fatalf("revoked token: %d %v", code, env)
	}
	mustAPI(t, "POST", base+"/api/user/delete", `{"user_id":"carol"}`)
	if code, env := serverAPI(t, "GET", base+"/api/user/get?user_id=carol", ""); code != 404 || env["err_msg"] != "user_not_found" {
		t.Fatalf("deleted user: %d %v", code, env)
	}
}

// jwksServer serves a JWKS whose keys the test can rotate.
type jwksServer struct {
	mu   sync.Mutex
	keys map[string]*rsa.PrivateKey
	srv  *httptest.Server
}

func newJWKS(t *testing.T) *jwksServer {
	j := &jwksServer{keys: map[string]*rsa.PrivateKey{}}
	j.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		j.mu.Lock()
		defer j.mu.Unlock()
		set := jwk.NewSet()
		for kid, k := range j.keys {
			pub, err := jwk.Import(k.Public())
			if err != nil {
				t.Error(err)
				return
			}
			_ = pub.Set(jwk.KeyIDKey, kid)
			_ = pub.Set(jwk.AlgorithmKey, jwa.RS256())
			_ = set.AddKey(pub)
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(set)
	}))
	t.Cleanup(j.srv.Close)
	return j
}

func (j *jwksServer) add(t *testing.T, kid string) {
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	j.mu.Lock()
	j.keys[kid] = k
	j.mu.Unlock()
}

// sign makes an app token for user signed by key kid.
func (j *jwksServer) sign(t *testing.T, kid, user, aud string, iat time.Time) string {
	j.mu.Lock()
	k := j.keys[kid]
	j.mu.Unlock()
	tok, err := jwt.NewBuilder().Subject(user).Issuer("my-app").Audience([]string{aud}).
		IssuedAt(iat).Expiration(time.Now().Add(time.Hour)).Claim("platform_id", 5).Build()
	if err != nil {
		t.Fatal(err)
	}
	priv, err := jwk.Import(k)
	if err != nil {
		t.Fatal(err)
	}
	_ = priv.Set(jwk.KeyIDKey, kid)
	signed, err := jwt.Sign(tok, jwt.WithKey(jwa.RS256(), priv))
	if err != nil {
		t.Fatal(err)
	}
	return string(signed)
}

// TestExternalJWTFromJWKS: a client logs in with an RS256 token its app
// signed, verified against the app's JWKS (served by the test); the user
// is created on first use; a rotated key is picked up; wrong audience and
// revoked users are refused.
func TestExternalJWTFromJWKS(t *testing.T) {
	t.Parallel()
	keys := newJWKS(t)
	keys.add(t, "k1")
	cfg := apiConfig(t)
	cfg.Auth.ExternalJWT = configs.Default().Auth.ExternalJWT
	cfg.Auth.ExternalJWT.Enabled = true
	cfg.Auth.ExternalJWT.JWKSURL = keys.srv.URL
	cfg.Auth.ExternalJWT.JWKSMinRefresh = 0
	cfg.Auth.ExternalJWT.Issuer = "my-app"
	cfg.Auth.ExternalJWT.Audience = "nexo"
	cfg.Auth.ExternalJWT.AutoCreate = true
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	base, _, _ := startApp(t, cfg)

	tok := keys.sign(t, "k1", "ext-dana", "nexo", time.Now().Add(-2*time.Second))
	code, env := call(t, "GET", base+"/user/info", "", tok)
	if code != 200 || dataField(env, "user_id") != "ext-dana" {
		t.Fatalf("app token: %d %v", code, env)
	}
	dana := dial(t, base, "ext-dana", tok)
	if r := dana.request(1001, map[string]any{}); r.ErrCode != 0 {
		t.Fatalf("ws with app token: %+v", r)
	}
	if code, env := call(t, "GET", base+"/user/info", "", keys.sign(t, "k1", "ext-dana", "other", time.Now())); code != 401 || env["err_msg"] != "token_invalid" {
		t.Fatalf("wrong audience: %d %v", code, env)
	}

	// The app rotates to a new key: a token with the new kid is accepted.
	keys.add(t, "k2")
	if code, env := call(t, "GET", base+"/user/info", "", keys.sign(t, "k2", "ext-erin", "nexo", time.Now().Add(-2*time.Second))); code != 200 {
		t.Fatalf("rotated key: %d %v", code, env)
	}

	// Revocation applies as to Nexo's own tokens.
	mustAPI(t, "POST", base+"/api/token/revoke", `{"user_id":"ext-dana"}`)
	if code, env := call(t, "GET", base+"/user/info", "", tok); code != 401 || env["err_msg"] != "token_revoked" {
		t.Fatalf("revoked app token: %d %v", code, env)
	}
	select {
	case <-dana.closed:
	case <-time.After(time.Second):
		t.Fatal("session on a revoked app token stayed open")
	}
}

// TestCORSPreflight: a preflight from an allowed origin is answered with
// the CORS headers; one from another origin is refused.
func TestCORSPreflight(t *testing.T) {
	t.Parallel()
	cfg := realConfig(t)
	cfg.HTTP.CORS.AllowedOrigins = []string{"https://app.example.com"}
	base, _, _ := startApp(t, cfg)
	preflight := func(origin string) *http.Response {
		req, _ := http.NewRequest("OPTIONS", base+"/msg/send", nil)
		req.Header.Set("Origin", origin)
		req.Header.Set("Access-Control-Request-Method", "POST")
		req.Header.Set("Access-Control-Request-Headers", "authorization,content-type")
		resp, err := (&http.Client{Timeout: 10 * time.Second}).Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp
	}
	ok := preflight("https://app.example.com")
	if ok.StatusCode != 204 || ok.Header.Get("Access-Control-Allow-Origin") != "https://app.example.com" ||
		!strings.Contains(strings.ToLower(ok.Header.Get("Access-Control-Allow-Headers")), "authorization") {
		t.Fatalf("allowed preflight: %d %v", ok.StatusCode, ok.Header)
	}
	if bad := preflight("https://evil.example.com"); bad.StatusCode != 403 || bad.Header.Get("Access-Control-Allow-Origin") != "" {
		t.Fatalf("other origin: %d %v", bad.StatusCode, bad.Header)
	}
}
