package app

import (
	"crypto/ecdh"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	webpush "github.com/SherClockHolmes/webpush-go"
)

// pushEndpoint is a Web Push service that records what reaches each
// subscription (services/push's tests decrypt the payloads; this one
// proves the wiring).
type pushEndpoint struct {
	srv *httptest.Server
	mu  sync.Mutex
	got map[string]int
}

func newPushEndpoint(t *testing.T) *pushEndpoint {
	p := &pushEndpoint{got: map[string]int{}}
	p.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.ReadAll(r.Body)
		if !strings.HasPrefix(r.Header.Get("Authorization"), "vapid t=") || r.Header.Get("Content-Encoding") != "aes128gcm" {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		p.mu.Lock()
		p.got[r.URL.Path]++
		p.mu.Unlock()
		w.WriteHeader(http.StatusCreated)
	}))
	t.Cleanup(p.srv.Close)
	return p
}

func (p *pushEndpoint) count(path string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.got[path]
}

func subscriptionJSON(t *testing.T, endpoint string) string {
	k, err := ecdh.P256().GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	auth := make([]byte, 16)
	_, _ = rand.Read(auth)
	return fmt.Sprintf(`{"endpoint":%q,"keys":{"p256dh":%q,"auth":%q}}`, endpoint,
		base64.RawURLEncoding.EncodeToString(k.PublicKey().Bytes()), base64.RawURLEncoding.EncodeToString(auth))
}

// TestBuiltInPushEndToEnd: with push.enabled, a browser registers its
// subscription over HTTP, an offline recipient's endpoint gets the
// message's notification, the sender's does not, another user can neither
// list nor delete the device, and logout of the platform forgets it.
func TestBuiltInPushEndToEnd(t *testing.T) {
	t.Parallel()
	ep := newPushEndpoint(t)
	cfg := apiConfig(t)
	cfg.Push.Enabled = true
	priv, pub, err := webpush.GenerateVAPIDKeys()
	if err != nil {
		t.Fatal(err)
	}
	cfg.Push.WebPush.VAPIDPublicKey, cfg.Push.WebPush.VAPIDPrivateKey = pub, priv
	cfg.Push.WebPush.AllowInsecureEndpoints = true
	cfg.Push.RetryBackoff, cfg.Push.RetryBackoffMax = 100*time.Millisecond, 400*time.Millisecond
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	base, _, _ := startApp(t, cfg)
	for _, u := range []string{"pia", "quinn", "rex"} {
		mustAPI(t, "POST", base+"/api/user/create", fmt.Sprintf(`{"user_id":%q,"nickname":"Nick %s"}`, u, u))
	}
	tok := func(u string) string {
		return fmt.Sprint(mustAPI(t, "POST", base+"/api/token", fmt.Sprintf(`{"user_id":%q,"platform_id":5}`, u))["token"])
	}
	pia, quinn, rex := tok("pia"), tok("quinn"), tok("rex")

	code, env := call(t, "GET", base+"/push/vapid_public_key", "", quinn)
	if code != 200 || env["data"].(map[string]any)["key"] != pub {
		t.Fatalf("vapid key: %d %v", code, env)
	}
	code, env = call(t, "POST", base+"/push/devices", `{"provider":"webpush","platform_id":5,"subscription":`+subscriptionJSON(t, ep.srv.URL+"/quinn")+`}`, quinn)
	if code != 200 {
		t.Fatalf("register: %d %v", code, env)
	}
	device := fmt.Sprint(env["data"].(map[string]any)["device_id"])
	if code, env = call(t, "POST", base+"/push/devices", `{"provider":"webpush","platform_id":5,"subscription":`+subscriptionJSON(t, ep.srv.URL+"/pia")+`}`, pia); code != 200 {
		t.Fatalf("register: %d %v", code, env)
	}
	if code, env = call(t, "POST", base+"/push/devices", `{"provider":"fcm","platform_id":2,"token":"`+strings.Repeat("a", 10<<10)+`"}`, pia); code != 400 ||
		env["err_msg"] != "push_token_invalid" && env["err_msg"] != "body_too_long" {
		t.Fatalf("10 KiB token: %d %v", code, env)
	}

	mustAPI(t, "POST", base+"/api/msg/send", `{"send_id":"pia","session_type":1,"recv_id":"quinn","msg_type":101,"content":{"text":"wake up"}}`)
	deadline := time.Now().Add(15 * time.Second)
	for ep.count("/quinn") < 1 {
		if time.Now().After(deadline) {
			t.Fatal("no notification reached quinn's endpoint")
		}
		time.Sleep(20 * time.Millisecond) // polling the endpoint with a deadline
	}
	if n := ep.count("/pia"); n != 0 {
		t.Errorf("the sender's endpoint got %d notifications", n)
	}

	if _, env = call(t, "GET", base+"/push/devices", "", rex); len(env["data"].(map[string]any)["devices"].([]any)) != 0 {
		t.Errorf("rex lists %v", env)
	}
	if code, env = call(t, "DELETE", base+"/push/devices/"+device, "", rex); code != 404 || env["err_msg"] != "push_device_not_found" {
		t.Errorf("rex deleting quinn's device: %d %v", code, env)
	}
	if code, env = call(t, "POST", base+"/auth/logout", "", quinn); code != 200 {
		t.Fatalf("logout: %d %v", code, env)
	}
	quinn = tok("quinn")
	if _, env = call(t, "GET", base+"/push/devices", "", quinn); len(env["data"].(map[string]any)["devices"].([]any)) != 0 {
		t.Errorf("after logout of platform 5 quinn still has %v", env)
	}
}

// TestBuiltInPushSurvivesAStoppedInstance: an instance stopped while its
// Web Push request hangs leaves the job pending (never acknowledged), and
// another instance on the same Redis and database takes it over and sends
// it: the notification is delivered once, not lost.
func TestBuiltInPushSurvivesAStoppedInstance(t *testing.T) {
	hung := make(chan struct{})
	var once sync.Once
	var mu sync.Mutex
	accepted, attempts := 0, 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.ReadAll(r.Body)
		mu.Lock()
		attempts++
		first := attempts == 1
		mu.Unlock()
		if first {
			once.Do(func() { close(hung) })
			<-r.Context().Done() // the first instance's request hangs until it gives up
			return
		}
		mu.Lock()
		accepted++
		mu.Unlock()
		w.WriteHeader(http.StatusCreated)
	}))
	t.Cleanup(srv.Close)
	cfg := apiConfig(t)
	cfg.Streams.ConsumerName = "" // the instance id names the consumer
	priv, pub, err := webpush.GenerateVAPIDKeys()
	if err != nil {
		t.Fatal(err)
	}
	cfg.Push.WebPush.VAPIDPublicKey, cfg.Push.WebPush.VAPIDPrivateKey = pub, priv
	cfg.Push.WebPush.AllowInsecureEndpoints = true
	cfg.Push.RetryBackoff, cfg.Push.RetryBackoffMax, cfg.Push.Timeout = 200*time.Millisecond, 400*time.Millisecond, time.Second
	first, second := cfg, cfg
	first.Cluster.InstanceID, second.Cluster.InstanceID = "push-a", "push-b"
	if err := first.Validate(); err != nil {
		t.Fatal(err)
	}
	_, base, _, stop := runApp(t, first)
	for _, u := range []string{"sal", "tia"} {
		mustAPI(t, "POST", base+"/api/user/create", fmt.Sprintf(`{"user_id":%q,"nickname":"Nick %s"}`, u, u))
	}
	tia := fmt.Sprint(mustAPI(t, "POST", base+"/api/token", `{"user_id":"tia","platform_id":5}`)["token"])
	if code, env := call(t, "POST", base+"/push/devices", `{"provider":"webpush","platform_id":5,"subscription":`+subscriptionJSON(t, srv.URL+"/tia")+`}`, tia); code != 200 {
		t.Fatalf("register: %d %v", code, env)
	}
	mustAPI(t, "POST", base+"/api/msg/send", `{"send_id":"sal","session_type":1,"recv_id":"tia","msg_type":101,"content":{"text":"do not lose me"}}`)
	select {
	case <-hung:
	case <-time.After(15 * time.Second):
		t.Fatal("the first instance sent nothing")
	}
	if err := stop(); err != nil {
		t.Fatalf("stop the first instance: %v", err)
	}
	runApp(t, second)
	deadline := time.Now().Add(15 * time.Second)
	for {
		mu.Lock()
		n := accepted
		mu.Unlock()
		if n >= 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the second instance did not send the pending notification")
		}
		time.Sleep(20 * time.Millisecond) // polling the endpoint with a deadline
	}
	mu.Lock()
	defer mu.Unlock()
	if accepted != 1 {
		t.Fatalf("delivered %d times, want 1", accepted)
	}
}
