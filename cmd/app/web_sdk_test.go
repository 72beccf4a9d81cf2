package app

import (
	"encoding/json"
	"fmt"
	"net/url"
	"testing"

	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"github.com/nexo-im/nexo/domain"
)

// TestWebSDKReloadMidStream runs the JavaScript SDK (docs/sdk.md) in
// Chromium, loaded from the server's /assets/sdk/ under the page's content
// security policy: a page sends 120 messages with the IndexedDB outbox and
// is reloaded while they are still going out; the reloaded page's client
// finds the rest in IndexedDB and resends them with their client_msg_ids.
// Every message must be saved exactly once, in send order.
func TestWebSDKReloadMidStream(t *testing.T) {
	t.Parallel()
	const total = 120
	b := newBrowser(t)
	_, base := webApp(t)
	for _, u := range []string{"sdkalice", "sdkbob"} {
		if code, env := call(t, "POST", base+"/user/register", fmt.Sprintf(`{"user_id":%q,"nickname":"n","password":"plum-tart-9"}`, u), ""); code != 200 {
			t.Fatalf("register %s: %d %v", u, code, env)
		}
	}
	token := func(user string) string {
		code, env := call(t, "POST", base+"/auth/login", fmt.Sprintf(`{"user_id":%q,"password":"plum-tart-9","platform_id":5}`, user), "")
		d, _ := env["data"].(map[string]any)
		tok, _ := d["token"].(string)
		if code != 200 || tok == "" {
			t.Fatalf("login %s: %d %v", user, code, env)
		}
		return tok
	}
	aliceToken := token("sdkalice")
	p := b.open("sdk", base)
	start := func(sendCount int) string {
		return `(async () => {
	const { NexoClient, IndexedDBOutbox } = await import('/assets/sdk/index.js');
	const c = new NexoClient({ url: location.origin, platformId: 5, getToken: () => ` + js(aliceToken) + `,
		outbox: new IndexedDBOutbox({ name: 'nexo-sdk-test' }), minReconnectDelay: 50 });
	window.sdk = { client: c, saved: 0, failed: [] };
	await c.connect();
	const track = (out) => out.saved.then(() => { window.sdk.saved++; }, (e) => { window.sdk.failed.push(String(e)); });
	for (const out of c.pendingMessages()) track(out);
	for (let i = 0; i < ` + fmt.Sprint(sendCount) + `; i++) track(c.send({ recvId: 'sdkbob', msgType: 101, content: { text: 'm' + i } }));
	return true;
})()`
	}
	awaitPromise := func(e *runtime.EvaluateParams) *runtime.EvaluateParams { return e.WithAwaitPromise(true) }
	p.run("start the SDK and send", chromedp.Evaluate(start(total), nil, awaitPromise))
	// Mid-stream: some saved, most still in the outbox.
	p.waitFor("the first 10 saved", `window.sdk && window.sdk.saved >= 10`)
	var before int
	p.run("reload mid-stream", chromedp.Evaluate(`window.sdk.saved`, &before), chromedp.Reload())
	if before >= total {
		t.Fatalf("all %d saved before the reload: the test did not reload mid-stream", before)
	}
	p.run("start the SDK again", chromedp.Evaluate(start(0), nil, awaitPromise))
	p.waitFor("the outbox drained", `window.sdk.client.pendingMessages().length === 0`)
	var failed []string
	p.eval(`window.sdk.failed`, &failed)
	if len(failed) > 0 {
		t.Errorf("sends failed after the reload: %v", failed)
	}

	// The server holds each message once, in send order.
	conv := domain.SingleConversationID("sdkalice", "sdkbob")
	bobToken := token("sdkbob")
	var texts []string
	ids := map[string]bool{}
	for from := 1; ; {
		code, env := call(t, "GET", base+"/msg/pull?"+url.Values{"conversation_id": {conv}, "begin_seq": {fmt.Sprint(from)}, "limit": {"100"}}.Encode(), "", bobToken)
		if code != 200 {
			t.Fatalf("pull: %d %v", code, env)
		}
		raw, _ := json.Marshal(env["data"])
		var pg struct {
			Messages []struct {
				Seq         int               `json:"seq"`
				Status      string            `json:"status"`
				ClientMsgID string            `json:"client_msg_id"`
				Content     map[string]string `json:"content"`
			} `json:"messages"`
			MaxSeq int `json:"max_seq"`
		}
		if err := json.Unmarshal(raw, &pg); err != nil {
			t.Fatal(err)
		}
		for _, m := range pg.Messages {
			if m.Status == "normal" {
				texts = append(texts, m.Content["text"])
				if ids[m.ClientMsgID] {
					t.Errorf("client_msg_id %s saved twice", m.ClientMsgID)
				}
				ids[m.ClientMsgID] = true
			}
		}
		if len(pg.Messages) == 0 || pg.Messages[len(pg.Messages)-1].Seq >= pg.MaxSeq {
			break
		}
		from = pg.Messages[len(pg.Messages)-1].Seq + 1
	}
	if len(texts) != total {
		t.Fatalf("the server holds %d messages, want %d (reloaded after %d were saved)", len(texts), total, before)
	}
	for i, text := range texts {
		if want := fmt.Sprintf("m%d", i); text != want {
			t.Fatalf("message %d is %q, want %q: not in send order (%v)", i, text, want, texts)
		}
	}
	t.Logf("reloaded after %d of %d were saved; all %d saved once, in order", before, total, total)
	p.assertNoConsoleErrors()
}
