package auth_test

import (
	"context"
	"encoding/base64"
	"errors"
	"log/slog"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/google/uuid"
	"github.com/redis/go-redis/v9"

	"github.com/nexo-im/nexo/configs"
	"github.com/nexo-im/nexo/domain"
	"github.com/nexo-im/nexo/gateway/auth"
	"github.com/nexo-im/nexo/store"
	"github.com/nexo-im/nexo/store/storetest"
)

const testSecret = "0123456789abcdef0123456789abcdef-test"

func testJWT() configs.JWT { return configs.JWT{Secret: testSecret, TTL: time.Hour, Issuer: "nexo"} }

// newAuth returns an Issuer and Verifier sharing a token store on the test Redis.
func newAuth(t *testing.T) (*auth.Issuer, *auth.Verifier, *store.Tokens) {
	t.Helper()
	rdb, prefix := storetest.Redis(t)
	tokens := store.NewTokens(rdb, store.Keys{Prefix: prefix})
	iss, err := auth.NewIssuer(testJWT(), tokens)
	if err != nil {
		t.Fatal(err)
	}
	ver, err := auth.NewVerifier(testJWT(), tokens)
	if err != nil {
		t.Fatal(err)
	}
	return iss, ver, tokens
}

// sign builds a token by hand, for claims the Issuer would never produce.
func sign(t *testing.T, method jwt.SigningMethod, key any, claims jwt.MapClaims) string {
	t.Helper()
	s, err := jwt.NewWithClaims(method, claims).SignedString(key)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestIssueVerifyRefreshRevoke(t *testing.T) {
	iss, ver, _ := newAuth(t)
	ctx := context.Background()

	t1, err := iss.Issue(ctx, "alice", 5)
	if err != nil {
		t.Fatal(err)
	}
	if d := time.Until(t1.ExpiresAt); d < 59*time.Minute || d > time.Hour {
		t.Fatalf("expires in %v, want about 1h", d)
	}
	if id, err := uuid.Parse(t1.JTI); err != nil || id.Version() != 7 {
		t.Fatalf("jti %q is not a UUIDv7 (%v)", t1.JTI, err)
	}
	c, err := ver.Verify(ctx, t1.Token)
	if err != nil {
		t.Fatalf("verify fresh token: %v", err)
	}
	if c.UserID != "alice" || c.PlatformID != 5 || c.JTI != t1.JTI || !c.ExpiresAt.Equal(t1.ExpiresAt) {
		t.Fatalf("claims %+v do not match token %+v", c, t1)
	}
	uid, pid, jti, exp, err := ver.Authenticate(ctx, t1.Token)
	if err != nil || uid != "alice" || pid != 5 || jti != t1.JTI || !exp.Equal(t1.ExpiresAt) {
		t.Fatalf("authenticate: %q %d %q %v %v", uid, pid, jti, exp, err)
	}

	// Another platform is independent; the same platform replaces.
	other, err := iss.Issue(ctx, "alice", 1)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ver.Verify(ctx, t1.Token); err != nil {
		t.Fatalf("login on another platform revoked the web token: %v", err)
	}
	t2, err := iss.Issue(ctx, "alice", 5)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ver.Verify(ctx, t1.Token); !errors.Is(err, domain.ErrTokenRevoked) {
		t.Fatalf("older token after a new login: got %v, want ErrTokenRevoked", err)
	}

	// Refresh replaces t2 by t3; refreshing t2 again fails.
	c2, err := ver.Verify(ctx, t2.Token)
	if err != nil {
		t.Fatal(err)
	}
	t3, err := iss.Refresh(ctx, c2)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ver.Verify(ctx, t2.Token); !errors.Is(err, domain.ErrTokenRevoked) {
		t.Fatalf("refreshed token: got %v, want ErrTokenRevoked", err)
	}
	if _, err := iss.Refresh(ctx, c2); !errors.Is(err, domain.ErrTokenRevoked) {
		t.Fatalf("second refresh of the same token: got %v, want ErrTokenRevoked", err)
	}
	c3, err := ver.Verify(ctx, t3.Token)
	if err != nil {
		t.Fatal(err)
	}

	// Logout.
	if err := iss.Revoke(ctx, c3); err != nil {
		t.Fatal(err)
	}
	if _, err := ver.Verify(ctx, t3.Token); !errors.Is(err, domain.ErrTokenRevoked) {
		t.Fatalf("after logout: got %v, want ErrTokenRevoked", err)
	}
	if err := iss.Revoke(ctx, c3); err != nil {
		t.Fatalf("second logout must be harmless: %v", err)
	}
	if _, err := ver.Verify(ctx, other.Token); err != nil {
		t.Fatalf("logout on web logged out iOS: %v", err)
	}
}

func TestVerifyRefuses(t *testing.T) {
	iss, ver, tokens := newAuth(t)
	ctx := context.Background()
	good, err := iss.Issue(ctx, "bob", 2)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	claims := func(mod func(jwt.MapClaims)) jwt.MapClaims {
		m := jwt.MapClaims{"user_id": "bob", "platform_id": 2, "jti": good.JTI, "iss": "nexo",
			"iat": now.Unix(), "exp": now.Add(time.Hour).Unix()}
		if mod != nil {
			mod(m)
		}
		return m
	}
	key := []byte(testSecret)
	// An expired token whose jti is active, so only the expiry can refuse it.
	expiredJTI := "expired-jti"
	if _, err := tokens.Activate(ctx, "carol", 3, expiredJTI, time.Hour); err != nil {
		t.Fatal(err)
	}

	tests := []struct {
		name  string
		token string
		want  error
	}{
		{"empty", "", domain.ErrTokenMissing},
		{"garbage", "not-a-jwt", domain.ErrTokenInvalid},
		{"tampered signature", good.Token[:len(good.Token)-2] + "xx", domain.ErrTokenInvalid},
		{"tampered payload", tamper(good.Token), domain.ErrTokenInvalid},
		{"other secret", sign(t, jwt.SigningMethodHS256, []byte(strings.Repeat("z", 40)), claims(nil)), domain.ErrTokenInvalid},
		{"HS512", sign(t, jwt.SigningMethodHS512, key, claims(nil)), domain.ErrTokenInvalid},
		{"alg none", sign(t, jwt.SigningMethodNone, jwt.UnsafeAllowNoneSignatureType, claims(nil)), domain.ErrTokenInvalid},
		{"other issuer", sign(t, jwt.SigningMethodHS256, key, claims(func(m jwt.MapClaims) { m["iss"] = "evil" })), domain.ErrTokenInvalid},
		{"no exp", sign(t, jwt.SigningMethodHS256, key, claims(func(m jwt.MapClaims) { delete(m, "exp") })), domain.ErrTokenInvalid},
		{"no jti", sign(t, jwt.SigningMethodHS256, key, claims(func(m jwt.MapClaims) { delete(m, "jti") })), domain.ErrTokenInvalid},
		{"bad platform", sign(t, jwt.SigningMethodHS256, key, claims(func(m jwt.MapClaims) { m["platform_id"] = 11 })), domain.ErrTokenInvalid},
		{"bad user id", sign(t, jwt.SigningMethodHS256, key, claims(func(m jwt.MapClaims) { m["user_id"] = "a b" })), domain.ErrTokenInvalid},
		{"platform as string", sign(t, jwt.SigningMethodHS256, key, claims(func(m jwt.MapClaims) { m["platform_id"] = "2" })), domain.ErrTokenInvalid},
		{"iat in the future", sign(t, jwt.SigningMethodHS256, key, claims(func(m jwt.MapClaims) { m["iat"] = now.Add(time.Hour).Unix() })), domain.ErrTokenInvalid},
		{"expired", sign(t, jwt.SigningMethodHS256, key, jwt.MapClaims{"user_id": "carol", "platform_id": 3, "jti": expiredJTI,
			"iss": "nexo", "iat": now.Add(-2 * time.Hour).Unix(), "exp": now.Add(-time.Second).Unix()}), domain.ErrTokenExpired},
		{"expired and revoked", sign(t, jwt.SigningMethodHS256, key, claims(func(m jwt.MapClaims) {
			m["jti"] = "gone"
			m["exp"] = now.Add(-time.Minute).Unix()
		})), domain.ErrTokenExpired},
		{"valid signature, not active", sign(t, jwt.SigningMethodHS256, key, claims(func(m jwt.MapClaims) { m["jti"] = "never-issued" })), domain.ErrTokenRevoked},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ver.Verify(ctx, tc.token)
			if !errors.Is(err, tc.want) {
				t.Fatalf("got %v, want %v", err, tc.want)
			}
			// The detail a client gets is one of our fixed texts, never
			// the JWT library's (issue 13 item 19).
			if errors.Is(err, domain.ErrTokenInvalid) && !fixedInvalid[strings.TrimPrefix(err.Error(), "token invalid: ")] {
				t.Fatalf("token_invalid detail %q is not a fixed text", err)
			}
		})
	}
	if _, err := ver.Verify(ctx, good.Token); err != nil {
		t.Fatalf("the good token must still pass: %v", err)
	}
}

// fixedInvalid are the only details of token_invalid.
var fixedInvalid = map[string]bool{"malformed token": true, "bad signature or algorithm": true,
	"wrong issuer": true, "token not valid yet": true, "bad claims": true}

// tamper changes the payload (user_id bob -> eve) and keeps the signature.
func tamper(token string) string {
	parts := strings.Split(token, ".")
	payload, _ := jwt.NewParser().DecodeSegment(parts[1])
	forged := strings.Replace(string(payload), `"bob"`, `"eve"`, 1)
	parts[1] = base64.RawURLEncoding.EncodeToString([]byte(forged))
	return strings.Join(parts, ".")
}

func TestVerifyTokenStoreDown(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := ln.Addr().String()
	_ = ln.Close()
	rdb := redis.NewClient(&redis.Options{Addr: dead, MaxRetries: -1, DialTimeout: time.Second})
	defer rdb.Close()
	tokens := store.NewTokens(rdb, store.Keys{Prefix: "t"})
	ver, err := auth.NewVerifier(testJWT(), tokens)
	if err != nil {
		t.Fatal(err)
	}
	iss, err := auth.NewIssuer(testJWT(), tokens)
	if err != nil {
		t.Fatal(err)
	}
	tok := sign(t, jwt.SigningMethodHS256, []byte(testSecret), jwt.MapClaims{"user_id": "bob", "platform_id": 2, "jti": "j",
		"iss": "nexo", "iat": time.Now().Unix(), "exp": time.Now().Add(time.Hour).Unix()})
	if _, err := ver.Verify(context.Background(), tok); !errors.Is(err, domain.ErrServerBusy) {
		t.Fatalf("verify with Redis down: got %v, want ErrServerBusy", err)
	}
	if _, err := iss.Issue(context.Background(), "bob", 2); err == nil {
		t.Fatal("issue with Redis down: want an error")
	}
}

func TestIssueRefusesBadInput(t *testing.T) {
	iss, _, _ := newAuth(t)
	for _, tc := range []struct {
		user     string
		platform int
	}{{"", 1}, {"a b", 1}, {"ok", 0}, {"ok", 11}} {
		if _, err := iss.Issue(context.Background(), tc.user, tc.platform); !errors.Is(err, domain.ErrInvalidArgument) {
			t.Errorf("issue(%q, %d): got %v, want ErrInvalidArgument", tc.user, tc.platform, err)
		}
	}
	if _, err := auth.NewIssuer(configs.JWT{TTL: time.Hour}, nil); err == nil {
		t.Error("NewIssuer without a secret: want an error")
	}
}

func discardLogger() *slog.Logger { return slog.New(slog.DiscardHandler) }

// BenchmarkVerify measures the per-request cost of authentication: HS256
// check plus one Redis GET of the active-token record (real Redis).
func BenchmarkVerify(b *testing.B) {
	rdb, prefix := storetest.Redis(b)
	tokens := store.NewTokens(rdb, store.Keys{Prefix: prefix})
	iss, err := auth.NewIssuer(testJWT(), tokens)
	if err != nil {
		b.Fatal(err)
	}
	ver, err := auth.NewVerifier(testJWT(), tokens)
	if err != nil {
		b.Fatal(err)
	}
	tok, err := iss.Issue(context.Background(), "bench", 5)
	if err != nil {
		b.Fatal(err)
	}
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := ver.Verify(context.Background(), tok.Token); err != nil {
				b.Fatal(err)
			}
		}
	})
}
