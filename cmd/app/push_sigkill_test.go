package app

import (
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/ecdh"
	"crypto/hkdf"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	webpush "github.com/SherClockHolmes/webpush-go"
	"github.com/redis/go-redis/v9"

	"github.com/nexo-im/nexo/services/push"
)

// gatedPushEndpoint is a Web Push service for one subscription whose
// answers can be held back: while the gate is closed every request hangs;
// once it opens the held requests answer 503 (so their sender retries) and
// new ones are decrypted and answered 201. Only a 201 counts as a delivered
// notification, so a request from an instance killed while it hung never
// counts, whatever the order in which the kill and the opening are seen.
type gatedPushEndpoint struct {
	srv     *httptest.Server
	key     *ecdh.PrivateKey
	auth    []byte
	open    chan struct{}
	mu      sync.Mutex
	hanging int
	held    int            // requests that hung, in total
	got     map[string]int // server_msg_id -> 201 answers
	errs    []string       // requests that could not be read
}

func newGatedPushEndpoint(t *testing.T) *gatedPushEndpoint {
	t.Helper()
	key, err := ecdh.P256().GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	g := &gatedPushEndpoint{key: key, auth: make([]byte, 16), open: make(chan struct{}), got: map[string]int{}}
	_, _ = rand.Read(g.auth)
	g.srv = httptest.NewServer(http.HandlerFunc(g.serve))
	t.Cleanup(g.srv.Close)
	return g
}

func (g *gatedPushEndpoint) subscription() string {
	return fmt.Sprintf(`{"endpoint":%q,"keys":{"p256dh":%q,"auth":%q}}`, g.srv.URL+"/sub",
		base64.RawURLEncoding.EncodeToString(g.key.PublicKey().Bytes()), base64.RawURLEncoding.EncodeToString(g.auth))
}

func (g *gatedPushEndpoint) serve(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return
	}
	select {
	case <-g.open:
	default:
		g.mu.Lock()
		g.hanging++
		g.held++
		g.mu.Unlock()
		select {
		case <-g.open:
		case <-r.Context().Done():
		}
		g.mu.Lock()
		g.hanging--
		g.mu.Unlock()
		w.WriteHeader(http.StatusServiceUnavailable)
		return
	}
	plain, err := decryptWebPush(body, g.key, g.auth)
	var n push.Notification
	if err == nil {
		err = json.Unmarshal(plain, &n)
	}
	if err != nil || n.ServerMsgID == "" || !strings.HasPrefix(r.Header.Get("Authorization"), "vapid t=") {
		g.mu.Lock()
		g.errs = append(g.errs, fmt.Sprintf("err=%v notification=%s", err, plain))
		g.mu.Unlock()
		w.WriteHeader(http.StatusBadRequest)
		return
	}
	g.mu.Lock()
	g.got[n.ServerMsgID]++
	g.mu.Unlock()
	w.WriteHeader(http.StatusCreated)
}

// decryptWebPush opens an aes128gcm Web Push message (RFC 8188 framing,
// RFC 8291 keys) with the subscription's private key and auth secret.
func decryptWebPush(body []byte, ua *ecdh.PrivateKey, auth []byte) ([]byte, error) {
	if len(body) < 21 {
		return nil, errors.New("short body")
	}
	// salt(16) | record size(4) | key id length(1) | key id (the
	// sender's public key) | one record.
	salt, idLen := body[:16], int(body[20])
	if len(body) < 21+idLen {
		return nil, errors.New("short key id")
	}
	asPub, err := ecdh.P256().NewPublicKey(body[21 : 21+idLen])
	if err != nil {
		return nil, err
	}
	secret, err := ua.ECDH(asPub)
	if err != nil {
		return nil, err
	}
	info := "WebPush: info\x00" + string(ua.PublicKey().Bytes()) + string(asPub.Bytes())
	ikm, err := hkdf.Key(sha256.New, secret, auth, info, 32)
	if err != nil {
		return nil, err
	}
	cek, err := hkdf.Key(sha256.New, ikm, salt, "Content-Encoding: aes128gcm\x00", 16)
	if err != nil {
		return nil, err
	}
	nonce, err := hkdf.Key(sha256.New, ikm, salt, "Content-Encoding: nonce\x00", 12)
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
	plain, err := gcm.Open(nil, nonce, body[21+idLen:], nil)
	if err != nil {
		return nil, err
	}
	plain = []byte(strings.TrimRight(string(plain), "\x00"))
	if len(plain) == 0 || plain[len(plain)-1] != 2 {
		return nil, errors.New("no last-record delimiter")
	}
	return plain[:len(plain)-1], nil
}

// TestBuiltInPushSIGKILLMidBatch: two `nexo serve` processes on one
// database, Redis and key prefix, built-in Web Push towards a local
// endpoint that hangs. p1 alone takes the first notification to an
// offline recipient's Web Push device and hangs on it; the rest of the
// messages queue as send jobs; p2 starts, reads them as one batch and
// hangs on it; p2 gets SIGKILL with that batch in flight, the endpoint is
// released, and every message must still produce at least one accepted
// notification (at least once: duplicates are counted and logged) from
// p1, which takes the dead instance's jobs over once they have been idle
// push.retry_backoff.
func TestBuiltInPushSIGKILLMidBatch(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs two nexo processes")
	}
	t.Parallel()
	cfg := realConfig(t) // skips, or fails under CI, without MariaDB and Redis
	ep := newGatedPushEndpoint(t)
	priv, pub, err := webpush.GenerateVAPIDKeys()
	if err != nil {
		t.Fatal(err)
	}
	bin := buildNexo(t, t.TempDir())
	env := []string{
		"NEXO_MYSQL_DSN=" + cfg.MySQL.DSN, "NEXO_REDIS_ADDR=" + cfg.Redis.Addr, "NEXO_REDIS_KEY_PREFIX=" + cfg.Redis.KeyPrefix,
		"NEXO_JWT_SECRET=" + validSecret, "NEXO_AUTH_BCRYPT_COST=4", "NEXO_ADMIN_TOKEN=admin-token", "NEXO_LOG_LEVEL=warn",
		"NEXO_WS_RATE_LIMIT=0", "NEXO_LIMITS_LOGIN_IP_RATE=0", "NEXO_LIMITS_REGISTER_IP_RATE=0", "NEXO_HTTP_MAX_CONNS_PER_IP=0",
		"NEXO_STREAMS_SHARDS=4", "NEXO_STREAMS_BLOCK=100ms", "NEXO_STREAMS_CLAIM_MIN_IDLE=2s",
		"NEXO_CLUSTER_HEARTBEAT_INTERVAL=250ms", "NEXO_CLUSTER_INSTANCE_TTL=3s",
		"NEXO_PUSH_ENABLED=true", "NEXO_PUSH_WEBPUSH_VAPID_PUBLIC_KEY=" + pub, "NEXO_PUSH_WEBPUSH_VAPID_PRIVATE_KEY=" + priv,
		"NEXO_PUSH_WEBPUSH_ALLOW_INSECURE_ENDPOINTS=true", "NEXO_PUSH_WEBPUSH_CONCURRENCY=4",
		// A job idle push.retry_backoff is taken over by another instance
		// (the send stage's claim min idle): long enough that p2 does not
		// take p1's hung job while it starts, short enough for the deadline
		// below. push.timeout outlasts the hang.
		"NEXO_PUSH_RETRY_BACKOFF=8s", "NEXO_PUSH_RETRY_BACKOFF_MAX=8s", "NEXO_PUSH_MAX_ATTEMPTS=50", "NEXO_PUSH_TIMEOUT=90s",
	}
	p1 := startProc(t, bin, "p1", env)
	ava := dial(t, p1.base, "ava", user(t, p1.base, "ava"))
	benTok := user(t, p1.base, "ben") // logged in, never connected: no foreground session
	if code, env := call(t, "POST", p1.base+"/push/devices", `{"provider":"webpush","platform_id":5,"subscription":`+ep.subscription()+`}`, benTok); code != 200 {
		t.Fatalf("register ben's device: %d %v", code, env)
	}

	rdb := redis.NewClient(&redis.Options{Addr: cfg.Redis.Addr})
	t.Cleanup(func() { _ = rdb.Close() })
	stream := push.NewKeys(cfg.Redis.KeyPrefix).Send(push.ProviderWebPush)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	// waitFor polls cond (the endpoint, the stream) with a deadline.
	waitFor := func(what string, cond func() bool) {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for !cond() {
			if time.Now().After(deadline) {
				t.Fatalf("timed out waiting until %s", what)
			}
			time.Sleep(20 * time.Millisecond) // polling with a deadline
		}
	}
	hanging := func() int {
		ep.mu.Lock()
		defer ep.mu.Unlock()
		return ep.hanging
	}
	pending := func(consumer string) int64 {
		p, err := rdb.XPending(ctx, stream, push.SendGroup).Result()
		if err != nil {
			t.Fatalf("XPENDING %s: %v", stream, err)
		}
		return p.Consumers[consumer]
	}

	const total = 40
	var sent []string // server_msg_id of every accepted message
	send := func(i int) {
		r := ava.send("ben", fmt.Sprintf("pk%03d", i), fmt.Sprintf("push me %d", i))
		if r.ErrCode != 0 {
			t.Fatalf("send %d: %d %s", i, r.ErrCode, r.ErrMsg)
		}
		id, _ := r.field("server_msg_id").(string)
		if id == "" {
			t.Fatalf("send %d: no server_msg_id in %s", i, r.Data)
		}
		sent = append(sent, id)
	}
	send(0)
	waitFor("p1 hangs on the first notification", func() bool { return hanging() >= 1 && pending("p1") >= 1 })
	for i := 1; i < total; i++ {
		send(i)
	}
	waitFor("every message is a send job", func() bool {
		n, err := rdb.XLen(ctx, stream).Result()
		return err == nil && n >= total
	})

	p2 := startProc(t, bin, "p2", env)
	waitFor("p2 holds a batch whose requests hang", func() bool { return hanging() >= 2 && pending("p2") >= 1 })
	held := pending("p2")
	if err := p2.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-p2.exited
	close(ep.open)
	t.Logf("SIGKILL p2 holding %d pending Web Push jobs (p1 holds %d)", held, pending("p1"))

	// Every message reaches the endpoint at least once.
	deadline := time.Now().Add(60 * time.Second)
	for {
		ep.mu.Lock()
		missing := slices.DeleteFunc(slices.Clone(sent), func(id string) bool { return ep.got[id] > 0 })
		errs := slices.Clone(ep.errs)
		ep.mu.Unlock()
		if len(errs) > 0 {
			t.Fatalf("the endpoint could not read %d requests, e.g. %s", len(errs), errs[0])
		}
		if len(missing) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d messages never produced a notification after p2 was killed, e.g. %s", len(missing), total, missing[0])
		}
		time.Sleep(50 * time.Millisecond) // polling the endpoint with a deadline
	}
	ep.mu.Lock()
	dups, extra := 0, 0
	for _, n := range ep.got {
		if n > 1 {
			dups++
			extra += n - 1
		}
	}
	t.Logf("%d messages, each notified at least once; %d notified more than once (%d extra notifications); %d requests hung before the kill",
		total, dups, extra, ep.held)
	ep.mu.Unlock()
}
