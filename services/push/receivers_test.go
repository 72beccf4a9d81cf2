package push

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/ecdh"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/hkdf"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// answer is a scripted reply of a receiver: status, Retry-After, body.
type answer struct {
	status     int
	retryAfter string
	body       string
}

// received is one request a receiver accepted or refused.
type received struct {
	at     time.Time
	token  string       // device token / subscription key that it went to
	n      Notification // decoded payload (webpush: decrypted)
	raw    map[string]any
	status int
}

// receiver is the common part: a script of answers per token and a log.
type receiver struct {
	t      *testing.T
	mu     sync.Mutex
	script map[string][]answer
	got    []received
	errs   []error
}

func (r *receiver) next(token string) answer {
	r.mu.Lock()
	defer r.mu.Unlock()
	if q := r.script[token]; len(q) > 0 {
		r.script[token] = q[1:]
		return q[0]
	}
	return answer{}
}

// on scripts the next answers for token.
func (r *receiver) on(token string, as ...answer) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.script[token] = append(r.script[token], as...)
}

func (r *receiver) record(x received) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.got = append(r.got, x)
}

func (r *receiver) fail(err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.errs = append(r.errs, err)
}

// accepted returns the notifications answered 2xx to token.
func (r *receiver) accepted(token string) []received {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []received
	for _, x := range r.got {
		if x.token == token && x.status/100 == 2 {
			out = append(out, x)
		}
	}
	return out
}

func (r *receiver) all(token string) []received {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []received
	for _, x := range r.got {
		if x.token == token {
			out = append(out, x)
		}
	}
	return out
}

func (r *receiver) checkNoErrors() {
	r.t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, err := range r.errs {
		r.t.Errorf("receiver: %v", err)
	}
}

func newReceiver(t *testing.T) *receiver {
	return &receiver{t: t, script: map[string][]answer{}}
}

func (r *receiver) reply(w http.ResponseWriter, a answer) int {
	if a.status == 0 {
		a.status = http.StatusCreated
	}
	if a.retryAfter != "" {
		w.Header().Set("Retry-After", a.retryAfter)
	}
	w.WriteHeader(a.status)
	_, _ = io.WriteString(w, a.body)
	return a.status
}

// --- Web Push: a push service endpoint per RFC 8030 that checks the VAPID
// JWT (RFC 8292) and decrypts the aes128gcm payload (RFC 8291).

// browserSub is a subscription as a browser makes it: its private key
// stays here, the test's user agent.
type browserSub struct {
	endpoint string
	priv     *ecdh.PrivateKey
	auth     []byte
}

func (b browserSub) json() *SubscriptionJSON {
	return &SubscriptionJSON{Endpoint: b.endpoint, Keys: KeysJSON{
		P256dh: base64.RawURLEncoding.EncodeToString(b.priv.PublicKey().Bytes()),
		Auth:   base64.RawURLEncoding.EncodeToString(b.auth)}}
}

type webPushReceiver struct {
	*receiver
	srv      *httptest.Server
	vapidPub string
	mu       sync.Mutex
	subs     map[string]browserSub // path id -> subscription
}

func newWebPushReceiver(t *testing.T, vapidPub string) *webPushReceiver {
	w := &webPushReceiver{receiver: newReceiver(t), vapidPub: vapidPub, subs: map[string]browserSub{}}
	w.srv = httptest.NewServer(http.HandlerFunc(w.serve))
	t.Cleanup(w.srv.Close)
	return w
}

// subscribe makes a browser subscription whose endpoint is this receiver.
func (w *webPushReceiver) subscribe(t *testing.T, id string) browserSub {
	priv, err := ecdh.P256().GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	auth := make([]byte, 16)
	_, _ = rand.Read(auth)
	b := browserSub{endpoint: w.srv.URL + "/push/" + id, priv: priv, auth: auth}
	w.mu.Lock()
	w.subs[id] = b
	w.mu.Unlock()
	return b
}

func (w *webPushReceiver) serve(rw http.ResponseWriter, r *http.Request) {
	id := strings.TrimPrefix(r.URL.Path, "/push/")
	w.mu.Lock()
	sub, ok := w.subs[id]
	w.mu.Unlock()
	if !ok {
		rw.WriteHeader(http.StatusNotFound)
		return
	}
	body, _ := io.ReadAll(r.Body)
	if err := w.checkVAPID(r); err != nil {
		w.fail(err)
		rw.WriteHeader(http.StatusUnauthorized)
		return
	}
	if r.Header.Get("Content-Encoding") != "aes128gcm" || r.Header.Get("TTL") == "" {
		w.fail(fmt.Errorf("headers: Content-Encoding %q TTL %q", r.Header.Get("Content-Encoding"), r.Header.Get("TTL")))
	}
	plain, err := decryptAES128GCM(body, sub.priv, sub.auth)
	if err != nil {
		w.fail(fmt.Errorf("decrypt: %w", err))
		rw.WriteHeader(http.StatusBadRequest)
		return
	}
	var n Notification
	if err := json.Unmarshal(plain, &n); err != nil {
		w.fail(fmt.Errorf("payload %q: %w", plain, err))
	}
	status := w.reply(rw, w.next(id))
	w.record(received{at: time.Now(), token: id, n: n, status: status})
}

// checkVAPID verifies "Authorization: vapid t=<jwt>, k=<key>": k is the
// server's VAPID key, the JWT is ES256-signed by it, aud is this origin,
// exp in the future (at most 24 h), sub a contact.
func (w *webPushReceiver) checkVAPID(r *http.Request) error {
	h := r.Header.Get("Authorization")
	if !strings.HasPrefix(h, "vapid ") {
		return fmt.Errorf("authorization %q is not vapid", h)
	}
	var tok, key string
	for _, part := range strings.Split(strings.TrimPrefix(h, "vapid "), ",") {
		k, v, _ := strings.Cut(strings.TrimSpace(part), "=")
		switch k {
		case "t":
			tok = v
		case "k":
			key = v
		}
	}
	if key != w.vapidPub {
		return fmt.Errorf("vapid k %q is not the server's key %q", key, w.vapidPub)
	}
	raw, err := base64.RawURLEncoding.DecodeString(key)
	if err != nil {
		return err
	}
	x, y := elliptic.Unmarshal(elliptic.P256(), raw) //nolint:staticcheck // a P-256 point from the wire
	if x == nil {
		return errors.New("vapid k is not a P-256 point")
	}
	pub := &ecdsa.PublicKey{Curve: elliptic.P256(), X: x, Y: y}
	claims := jwt.MapClaims{}
	if _, err := jwt.ParseWithClaims(tok, claims, func(*jwt.Token) (any, error) { return pub, nil },
		jwt.WithValidMethods([]string{"ES256"}), jwt.WithExpirationRequired()); err != nil {
		return fmt.Errorf("vapid jwt: %w", err)
	}
	if aud, _ := claims["aud"].(string); aud != w.srv.URL {
		return fmt.Errorf("vapid aud %q, want %q", aud, w.srv.URL)
	}
	if exp, _ := claims.GetExpirationTime(); exp == nil || time.Until(exp.Time) > 24*time.Hour {
		return fmt.Errorf("vapid exp %v beyond 24h", exp)
	}
	if sub, _ := claims["sub"].(string); !strings.HasPrefix(sub, "mailto:") && !strings.HasPrefix(sub, "https:") {
		return fmt.Errorf("vapid sub %q", sub)
	}
	return nil
}

// decryptAES128GCM undoes RFC 8291 encryption with the user agent's key
// and auth secret (RFC 8188 header: salt, rs, idlen, keyid = the
// application server's ephemeral public key).
func decryptAES128GCM(body []byte, ua *ecdh.PrivateKey, auth []byte) ([]byte, error) {
	if len(body) < 21 {
		return nil, errors.New("short body")
	}
	salt, rs, idlen := body[:16], binary.BigEndian.Uint32(body[16:20]), int(body[20])
	if len(body) < 21+idlen || idlen != 65 {
		return nil, fmt.Errorf("keyid length %d", idlen)
	}
	asPubBytes := body[21 : 21+idlen]
	ct := body[21+idlen:]
	if uint32(len(ct)) > rs {
		return nil, fmt.Errorf("record of %d bytes beyond rs %d (one record expected)", len(ct), rs)
	}
	asPub, err := ecdh.P256().NewPublicKey(asPubBytes)
	if err != nil {
		return nil, err
	}
	secret, err := ua.ECDH(asPub)
	if err != nil {
		return nil, err
	}
	prkKey, err := hkdf.Extract(sha256.New, secret, auth)
	if err != nil {
		return nil, err
	}
	info := append(append([]byte("WebPush: info\x00"), ua.PublicKey().Bytes()...), asPubBytes...)
	ikm, err := hkdf.Expand(sha256.New, prkKey, string(info), 32)
	if err != nil {
		return nil, err
	}
	prk, err := hkdf.Extract(sha256.New, ikm, salt)
	if err != nil {
		return nil, err
	}
	cek, err := hkdf.Expand(sha256.New, prk, "Content-Encoding: aes128gcm\x00", 16)
	if err != nil {
		return nil, err
	}
	nonce, err := hkdf.Expand(sha256.New, prk, "Content-Encoding: nonce\x00", 12)
	if err != nil {
		return nil, err
	}
	block, err := aes.NewCipher(cek)
	if err != nil {
		return nil, err
	}
	gcm, err := cipher.NewGCM(block)
	if err != nil {
		return nil, err
	}
	plain, err := gcm.Open(nil, nonce, ct, nil)
	if err != nil {
		return nil, err
	}
	// The last record ends with the delimiter 0x02, then zero padding.
	i := len(plain) - 1
	for i >= 0 && plain[i] == 0 {
		i--
	}
	if i < 0 || plain[i] != 2 {
		return nil, errors.New("no last-record delimiter")
	}
	return plain[:i], nil
}

// --- FCM HTTP v1: an OAuth token endpoint and messages:send.

type fcmReceiver struct {
	*receiver
	srv      *httptest.Server
	keyFile  string
	tokens   int // access tokens issued
	tokensMu sync.Mutex
}

const fcmProject = "nexo-test"

func newFCMReceiver(t *testing.T) *fcmReceiver {
	f := &fcmReceiver{receiver: newReceiver(t)}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /token", func(w http.ResponseWriter, r *http.Request) {
		_ = r.ParseForm()
		if r.Form.Get("grant_type") != "urn:ietf:params:oauth:grant-type:jwt-bearer" || r.Form.Get("assertion") == "" {
			f.fail(fmt.Errorf("token request %v", r.Form))
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		f.tokensMu.Lock()
		f.tokens++
		f.tokensMu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"access_token":"fcm-access","token_type":"Bearer","expires_in":3600}`)
	})
	mux.HandleFunc("POST /v1/projects/{project}/messages:send", func(w http.ResponseWriter, r *http.Request) {
		if r.PathValue("project") != fcmProject || r.Header.Get("Authorization") != "Bearer fcm-access" {
			f.fail(fmt.Errorf("send: project %q authorization %q", r.PathValue("project"), r.Header.Get("Authorization")))
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		var body struct {
			Message map[string]any `json:"message"`
		}
		if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
			f.fail(err)
		}
		tok, _ := body.Message["token"].(string)
		a := f.next(tok)
		if a.status == 0 {
			a = answer{status: 200, body: `{"name":"projects/nexo-test/messages/1"}`}
		}
		status := f.reply(w, a)
		f.record(received{at: time.Now(), token: tok, raw: body.Message, status: status})
	})
	f.srv = httptest.NewServer(mux)
	t.Cleanup(f.srv.Close)
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	der, _ := x509.MarshalPKCS8PrivateKey(key)
	sa, _ := json.Marshal(map[string]string{
		"type": "service_account", "project_id": fcmProject, "private_key_id": "k1",
		"private_key":  string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})),
		"client_email": "push@nexo-test.iam.gserviceaccount.com", "client_id": "1", "token_uri": f.srv.URL + "/token",
	})
	f.keyFile = filepath.Join(t.TempDir(), "fcm.json")
	if err := os.WriteFile(f.keyFile, sa, 0o600); err != nil {
		t.Fatal(err)
	}
	return f
}

const fcmUnregistered = `{"error":{"code":404,"status":"NOT_FOUND","message":"Requested entity was not found.",
 "details":[{"@type":"type.googleapis.com/google.firebase.fcm.v1.FcmError","errorCode":"UNREGISTERED"}]}}`

// --- APNs: an HTTP/2 TLS receiver of /3/device/<token> checking the
// provider JWT against the .p8 key.

type apnsReceiver struct {
	*receiver
	srv     *httptest.Server
	keyFile string
	pub     *ecdsa.PublicKey
}

const (
	apnsKeyID  = "ABC123DEFG"
	apnsTeamID = "TEAM123456"
	apnsTopic  = "im.nexo.app"
)

func newAPNsReceiver(t *testing.T) *apnsReceiver {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, _ := x509.MarshalPKCS8PrivateKey(key)
	a := &apnsReceiver{receiver: newReceiver(t), pub: &key.PublicKey}
	a.keyFile = filepath.Join(t.TempDir(), "AuthKey_"+apnsKeyID+".p8")
	if err := os.WriteFile(a.keyFile, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	a.srv = httptest.NewUnstartedServer(http.HandlerFunc(a.serve))
	a.srv.EnableHTTP2 = true
	a.srv.StartTLS()
	t.Cleanup(a.srv.Close)
	return a
}

func (a *apnsReceiver) serve(w http.ResponseWriter, r *http.Request) {
	tok := strings.TrimPrefix(r.URL.Path, "/3/device/")
	if r.ProtoMajor != 2 {
		a.fail(fmt.Errorf("APNs request over %s, want HTTP/2", r.Proto))
	}
	bearer := strings.TrimPrefix(r.Header.Get("Authorization"), "bearer ")
	claims := jwt.MapClaims{}
	parsed, err := jwt.ParseWithClaims(bearer, claims, func(*jwt.Token) (any, error) { return a.pub, nil }, jwt.WithValidMethods([]string{"ES256"}))
	if err != nil || parsed.Header["kid"] != apnsKeyID || claims["iss"] != apnsTeamID {
		a.fail(fmt.Errorf("provider token: %v (kid %v iss %v)", err, parsed.Header["kid"], claims["iss"]))
		w.WriteHeader(http.StatusForbidden)
		return
	}
	if r.Header.Get("apns-topic") != apnsTopic {
		a.fail(fmt.Errorf("apns-topic %q", r.Header.Get("apns-topic")))
	}
	var body map[string]any
	if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
		a.fail(err)
	}
	body["_push_type"] = r.Header.Get("apns-push-type")
	body["_collapse_id"] = r.Header.Get("apns-collapse-id")
	body["_priority"] = r.Header.Get("apns-priority")
	ans := a.next(tok)
	if ans.status == 0 {
		ans.status = 200
	}
	status := a.reply(w, ans)
	a.record(received{at: time.Now(), token: tok, raw: body, status: status})
}
