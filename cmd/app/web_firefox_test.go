package app

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"
)

// firefoxPath is Debian's Firefox ESR. The Firefox check is optional: CI
// installs only Chromium, so without Firefox the test skips (also under
// CI=true). Firefox no longer speaks the DevTools protocol chromedp uses;
// it is driven over WebDriver BiDi, its standard remote protocol.
const firefoxPath = "/usr/bin/firefox-esr"

// bidi is a minimal WebDriver BiDi client: commands and their results,
// events ignored.
type bidi struct {
	t    *testing.T
	conn *websocket.Conn
	next int
	mu   sync.Mutex
}

func (b *bidi) call(method string, params any) map[string]any {
	b.t.Helper()
	b.mu.Lock()
	defer b.mu.Unlock()
	b.next++
	id := b.next
	msg, _ := json.Marshal(map[string]any{"id": id, "method": method, "params": params})
	_ = b.conn.SetWriteDeadline(time.Now().Add(pageWait))
	if err := b.conn.WriteMessage(websocket.TextMessage, msg); err != nil {
		b.t.Fatalf("firefox: %s: %v", method, err)
	}
	_ = b.conn.SetReadDeadline(time.Now().Add(pageWait + 5*time.Second))
	for {
		_, raw, err := b.conn.ReadMessage()
		if err != nil {
			b.t.Fatalf("firefox: %s: %v", method, err)
		}
		var r struct {
			ID     int            `json:"id"`
			Type   string         `json:"type"`
			Result map[string]any `json:"result"`
		}
		if json.Unmarshal(raw, &r) != nil || r.ID != id {
			continue // an event, or not ours
		}
		if r.Type == "error" {
			b.t.Fatalf("firefox: %s: %s", method, raw)
		}
		return r.Result
	}
}

// firefoxPage is one Firefox tab.
type firefoxPage struct {
	b   *bidi
	ctx string
}

// eval runs expr in the page (awaiting a promise) and returns its value.
func (p *firefoxPage) eval(expr string) any {
	p.b.t.Helper()
	res := p.b.call("script.evaluate", map[string]any{"expression": expr, "target": map[string]any{"context": p.ctx}, "awaitPromise": true})
	if res["type"] == "exception" {
		p.b.t.Fatalf("firefox: %s threw: %v", expr, res["exceptionDetails"])
	}
	r, _ := res["result"].(map[string]any)
	return r["value"]
}

// waitFor polls the predicate inside the page every 50 ms (one round trip)
// until it holds or pageWait passes.
func (p *firefoxPage) waitFor(what, expr string) {
	p.b.t.Helper()
	ok := p.eval(`new Promise((resolve) => {
		const deadline = Date.now() + ` + fmt.Sprint(pageWait.Milliseconds()) + `;
		const check = () => { let v = false; try { v = !!(` + expr + `); } catch (e) {}
			if (v || Date.now() > deadline) resolve(v); else setTimeout(check, 50); };
		check(); })`)
	if ok != true {
		p.b.t.Fatalf("firefox: timed out waiting for %s\npage text:\n%v", what, p.eval(`document.body.innerText`))
	}
}

// submit fills the fields (id → value) and submits the form.
func (p *firefoxPage) submit(form string, fields map[string]string) {
	p.b.t.Helper()
	var js strings.Builder
	js.WriteString("(() => {")
	for id, v := range fields {
		fmt.Fprintf(&js, "document.getElementById(%s).value = %s;", jsq(id), jsq(v))
	}
	fmt.Fprintf(&js, "document.getElementById(%s).requestSubmit(); return true; })()", jsq(form))
	p.eval(js.String())
}

func jsq(s string) string { b, _ := json.Marshal(s); return string(b) }

// startFirefox runs headless Firefox ESR with a fresh profile and returns
// its first tab.
func startFirefox(t *testing.T) *firefoxPage {
	t.Helper()
	if _, err := exec.LookPath(firefoxPath); err != nil {
		t.Skipf("skipping the Firefox check: %s not found (apt-get install firefox-esr)", firefoxPath)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, firefoxPath, "--headless", "--no-remote", "--profile", t.TempDir(), "--remote-debugging-port", "0")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.WaitDelay = 5 * time.Second // its content processes keep stderr open
	if err := cmd.Start(); err != nil {
		cancel()
		t.Fatalf("start %s: %v", firefoxPath, err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	t.Cleanup(func() { cancel(); <-exited })
	// Firefox prints where its BiDi server listens (port 0: a free one).
	found := make(chan string, 1)
	go func() {
		re := regexp.MustCompile(`WebDriver BiDi listening on (ws://\S+)`)
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			if m := re.FindStringSubmatch(sc.Text()); m != nil {
				select {
				case found <- m[1]:
				default:
				}
			}
		}
	}()
	var url string
	select {
	case url = <-found:
	case <-exited:
		t.Fatalf("%s exited before listening", firefoxPath)
	case <-time.After(30 * time.Second):
		t.Fatalf("%s did not start its BiDi server within 30 s", firefoxPath)
	}
	conn, _, err := websocket.DefaultDialer.Dial(url+"/session", nil)
	if err != nil {
		t.Fatalf("connect to Firefox at %s: %v", url, err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	b := &bidi{t: t, conn: conn}
	b.call("session.new", map[string]any{"capabilities": map[string]any{}})
	tree := b.call("browsingContext.getTree", map[string]any{})
	contexts, _ := tree["contexts"].([]any)
	if len(contexts) == 0 {
		t.Fatal("firefox: no browsing context")
	}
	first, _ := contexts[0].(map[string]any)
	return &firefoxPage{b: b, ctx: fmt.Sprint(first["context"])}
}

// TestWebFirefox: the client runs in Firefox too — sign up, chat with a
// WebSocket client, see the reply and the read tick, reload and find the
// history.
func TestWebFirefox(t *testing.T) {
	t.Parallel()
	_, base := webApp(t)
	ff := startFirefox(t)
	bob := dial(t, base, "bob", user(t, base, "bob"))
	conv := "si_alice_bob"

	ff.b.call("browsingContext.navigate", map[string]any{"context": ff.ctx, "url": base + "/", "wait": "complete"})
	ff.waitFor("sign-in page", `!document.getElementById('signin').hidden`)
	ff.submit("register-form", map[string]string{"register-user": "alice", "register-nickname": "Alice", "register-password": "plum-tart-9"})
	ff.waitFor("connected", `document.querySelector('#conn[data-state="open"]')`)
	ff.submit("new-chat", map[string]string{"new-chat-user": "bob"})
	ff.waitFor("chat open", `!document.getElementById('composer').hidden`)
	ff.submit("composer", map[string]string{"composer-input": "hello from Firefox"})
	ff.waitFor("saved", `document.querySelector('#messages li[data-state="saved"]')`)

	got := bob.waitPushes(2001, "the message from Firefox", func(f []frame) bool { return len(f) > 0 })
	if got[0].field("content").(map[string]any)["text"] != "hello from Firefox" {
		t.Fatalf("bob got %s", got[0].Data)
	}
	if r := bob.request(1101, map[string]any{"ack_type": "read", "conversation_id": conv, "seq": 1}); r.ErrCode != 0 {
		t.Fatalf("bob's read ACK: %+v", r)
	}
	ff.waitFor("read tick", `document.querySelector('#messages li[data-state="read"]')`)
	bob.send("alice", "b-1", "hello Firefox")
	ff.waitFor("reply", `document.getElementById('messages').textContent.includes('hello Firefox')`)

	ff.b.call("browsingContext.reload", map[string]any{"context": ff.ctx, "wait": "complete"})
	ff.waitFor("connected after reload", `document.querySelector('#conn[data-state="open"]')`)
	ff.waitFor("conversation listed", `document.querySelector('#conv-list li[data-conv-id="`+conv+`"] button')`)
	ff.eval(`document.querySelector('#conv-list li[data-conv-id="` + conv + `"] button').click()`)
	ff.waitFor("history", `[...document.querySelectorAll('#messages li.msg .text')].map(e => e.textContent).join('|') === 'hello from Firefox|hello Firefox'`)
}
