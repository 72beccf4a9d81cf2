package app

import (
	"crypto/ecdh"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"testing"

	"github.com/SherClockHolmes/webpush-go"
	"github.com/chromedp/chromedp"
)

// TestWebPushRegistersTheSubscription: with notifications allowed, the
// "Enable notifications" control subscribes with the server's VAPID key
// and registers the subscription as the user's webpush device (POST
// /push/devices); disabling forgets it. Headless Chromium reaches no push
// service, so the browser's PushManager is replaced by one that checks the
// applicationServerKey it is given and answers a subscription with real
// P-256 keys; everything else — push.js, the worker's registration, the
// server's validation of the keys — is the real thing.
func TestWebPushRegistersTheSubscription(t *testing.T) {
	t.Parallel()
	b := newBrowser(t)
	cfg := realConfig(t)
	priv, pub, err := webpush.GenerateVAPIDKeys()
	if err != nil {
		t.Fatal(err)
	}
	cfg.Push.WebPush.VAPIDPublicKey, cfg.Push.WebPush.VAPIDPrivateKey = pub, priv
	_, base := webAppWith(t, cfg)

	key, err := ecdh.P256().GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	auth := make([]byte, 16)
	_, _ = rand.Read(auth)
	b64 := base64.RawURLEncoding.EncodeToString
	endpoint := "https://push.example.test/send/" + b64(auth)

	p := b.open("sia", base)
	p.register("sia")
	p.grantNotifications(base)
	// The stand-in push service: it records the key it was asked to
	// subscribe with and answers with the subscription a browser would.
	p.run("stand-in PushManager", chromedp.Evaluate(fmt.Sprintf(`(() => {
	let current = null;
	const sub = { endpoint: %s,
		toJSON() { return { endpoint: this.endpoint, expirationTime: null, keys: { p256dh: %s, auth: %s } }; },
		async unsubscribe() { current = null; return true; } };
	PushManager.prototype.getSubscription = async function () { return current; };
	PushManager.prototype.subscribe = async function (opts) {
		const k = new Uint8Array(opts.applicationServerKey);
		window.__subscribedWith = btoa(String.fromCharCode(...k)).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '');
		current = sub;
		return sub;
	};
	return true;
})()`, js(endpoint), js(b64(key.PublicKey().Bytes())), js(b64(auth))), nil))
	p.run("enable notifications", chromedp.Click(`#push-toggle`, chromedp.ByQuery))
	p.waitFor("notifications on", `/^Notifications on/.test(document.getElementById('push-status').textContent)`)
	var with string
	p.eval(`window.__subscribedWith`, &with)
	if with != pub {
		t.Errorf("subscribed with applicationServerKey %q, want the server's VAPID key %q", with, pub)
	}

	// The server holds it as sia's webpush device.
	_, env := call(t, "POST", base+"/auth/login", `{"user_id":"sia","password":"plum-tart-9","platform_id":1}`, "")
	tok, _ := env["data"].(map[string]any)["token"].(string)
	devices := func() []any {
		code, env := call(t, "GET", base+"/push/devices", "", tok)
		if code != 200 {
			t.Fatalf("GET /push/devices: %d %v", code, env)
		}
		list, _ := env["data"].(map[string]any)["devices"].([]any)
		return list
	}
	list := devices()
	if len(list) != 1 {
		t.Fatalf("devices %v, want the one subscription", list)
	}
	d, _ := list[0].(map[string]any)
	if d["provider"] != "webpush" || fmt.Sprint(d["platform_id"]) != "5" {
		t.Errorf("device %v, want provider webpush on platform 5", d)
	}

	p.run("disable notifications", chromedp.Click(`#push-toggle`, chromedp.ByQuery))
	p.waitFor("notifications off", `!/^Notifications on/.test(document.getElementById('push-status').textContent) && document.getElementById('push-toggle').textContent !== 'Disable notifications'`)
	// disablePush says "off" only after the server forgot the device.
	if left := devices(); len(left) != 0 {
		t.Fatalf("the device is still registered after disabling: %v", left)
	}
}
