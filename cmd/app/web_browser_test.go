package app

import (
	"context"
	"encoding/json"
	"fmt"
	"log"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	cdppage "github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/cdproto/target"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/nexo-im/nexo/configs"
	"github.com/nexo-im/nexo/store/storetest"
)

// The browser tests drive the web client (package web) in Debian's
// headless Chromium against the whole server started in-process on the
// test MariaDB and Redis. They wait on conditions of the page (a JS
// predicate polled with a deadline), never on fixed sleeps, and save
// screenshots to a folder (NEXO_WEB_SCREENSHOTS, else the test's temporary
// folder).

// chromiumPath is Debian's Chromium (packages chromium and chromium-driver;
// .ci/run installs them). A downloaded browser is never used.
const chromiumPath = "/usr/bin/chromium"

// pageWait bounds every wait on a page condition: generous for a loaded
// 2-core machine, far below the suite's budget when things work.
const pageWait = 15 * time.Second

// needChromium skips the test without Chromium, or fails it under CI=true.
func needChromium(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath(chromiumPath); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("browser tests need %s (apt-get install chromium chromium-driver): %v", chromiumPath, err)
		}
		t.Skipf("skipping browser test: %s not found (apt-get install chromium chromium-driver)", chromiumPath)
	}
}

// webApp starts the whole server (cmd/app mounts the web client) on the
// test MariaDB and Redis, and returns it with its base URL.
func webApp(t *testing.T) (*App, string) {
	t.Helper()
	return webAppWith(t, realConfig(t))
}

// webAppWith is webApp for a given configuration.
func webAppWith(t *testing.T, cfg configs.Config) (*App, string) {
	t.Helper()
	logs := &storetest.LogBuffer{}
	logger := slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelInfo}))
	ctx, cancel := context.WithCancel(context.Background())
	a, err := New(ctx, cfg, logger)
	if err != nil {
		cancel()
		t.Fatalf("New: %v\nlogs:\n%s", err, logs)
	}
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := awaitRun(t, done); err != nil {
			t.Errorf("run: %v", err)
		}
		if t.Failed() {
			t.Logf("server logs:\n%s", logs)
		}
	})
	return a, "http://" + a.listener.Addr().String()
}

// browser is one headless Chromium process; pages are opened in separate
// browser contexts (separate cookies and storage, like two people).
type browser struct {
	t     *testing.T
	ctx   context.Context
	shots string
	seq   int
}

func newBrowser(t *testing.T) *browser {
	t.Helper()
	needChromium(t)
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(chromiumPath),
		chromedp.Flag("headless", true),
		chromedp.Flag("no-sandbox", true),
		chromedp.Flag("disable-gpu", true),
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("no-first-run", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		// No UserDataDir: chromedp gives each browser a fresh temporary
		// --user-data-dir and removes it when the browser exits.
		chromedp.WindowSize(1100, 760),
	)
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	bctx, cancelBrowser := chromedp.NewContext(actx, chromedp.WithErrorf(func(format string, args ...any) {
		// chromedp reports CDP events it has no handler for (the top
		// layer of a <dialog>); they are not errors of the page.
		if msg := fmt.Sprintf(format, args...); !strings.Contains(msg, "unhandled node event") {
			log.Print(msg)
		}
	}))
	// Start the browser now, so a broken install fails here and clearly.
	if err := chromedp.Run(bctx); err != nil {
		cancelBrowser()
		cancelAlloc()
		t.Fatalf("start %s: %v", chromiumPath, err)
	}
	t.Cleanup(func() { cancelBrowser(); cancelAlloc() })
	shots := os.Getenv("NEXO_WEB_SCREENSHOTS")
	if shots == "" {
		shots = t.TempDir()
	} else if err := os.MkdirAll(shots, 0o755); err != nil {
		t.Fatal(err)
	}
	return &browser{t: t, ctx: bctx, shots: shots}
}

// page is one tab in its own browser context, with the page's console
// errors and uncaught exceptions collected.
type page struct {
	t    *testing.T
	b    *browser
	name string
	ctx  context.Context
	base string

	mu     sync.Mutex
	errors []string
}

// open opens a tab for name in a fresh browser context and loads base.
func (b *browser) open(name, base string) *page {
	b.t.Helper()
	// Each page gets its own browser context, opened in a new window:
	// headless Chromium has no window a tab of a new context could join
	// ("no browser is open"), so chromedp.WithNewBrowserContext fails there.
	var tid target.ID
	err := chromedp.Run(b.ctx, chromedp.ActionFunc(func(ctx context.Context) error {
		exec := cdp.WithExecutor(ctx, chromedp.FromContext(ctx).Browser)
		bc, err := target.CreateBrowserContext().WithDisposeOnDetach(true).Do(exec)
		if err != nil {
			return err
		}
		tid, err = target.CreateTarget("about:blank").WithBrowserContextID(bc).WithNewWindow(true).Do(exec)
		return err
	}))
	if err != nil {
		b.t.Fatalf("%s: open a browser context: %v", name, err)
	}
	ctx, cancel := chromedp.NewContext(b.ctx, chromedp.WithTargetID(tid))
	b.t.Cleanup(cancel)
	// The first Run attaches to the tab and ties the tab's life to the
	// context it gets: give it the page's own, not a timeout of one call.
	if err := chromedp.Run(ctx); err != nil {
		b.t.Fatalf("%s: attach to the tab: %v", name, err)
	}
	p := &page{t: b.t, b: b, name: name, ctx: ctx, base: base}
	chromedp.ListenTarget(ctx, func(ev any) {
		switch e := ev.(type) {
		case *cdppage.EventJavascriptDialogOpening:
			// Accept every confirm() (leaving a group asks for one).
			go func() { _ = chromedp.Run(ctx, cdppage.HandleJavaScriptDialog(true)) }()
		case *runtime.EventExceptionThrown:
			p.addError("exception: " + e.ExceptionDetails.Error())
		case *runtime.EventConsoleAPICalled:
			if e.Type == runtime.APITypeError {
				var parts []string
				for _, a := range e.Args {
					parts = append(parts, strings.Trim(string(a.Value), `"`)+a.Description)
				}
				p.addError("console.error: " + strings.Join(parts, " "))
			}
		}
	})
	p.run("load the page", chromedp.Navigate(base+"/"))
	return p
}

func (p *page) addError(s string) {
	p.mu.Lock()
	p.errors = append(p.errors, s)
	p.mu.Unlock()
}

// consoleErrors returns the page's errors so far.
func (p *page) consoleErrors() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.errors...)
}

// run runs actions on the page, failing the test (with a screenshot and
// the page's text) when they fail.
func (p *page) run(what string, actions ...chromedp.Action) {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(p.ctx, pageWait+5*time.Second)
	defer cancel()
	if err := chromedp.Run(ctx, actions...); err != nil {
		p.fail(what, err)
	}
}

func (p *page) fail(what string, err error) {
	p.t.Helper()
	file := p.screenshot("failed-" + strings.ReplaceAll(what, " ", "-"))
	var text string
	ctx, cancel := context.WithTimeout(p.ctx, 3*time.Second)
	defer cancel()
	_ = chromedp.Run(ctx, chromedp.Evaluate(`document.body.innerText`, &text))
	p.t.Fatalf("%s: %s: %v\nscreenshot: %s\nconsole errors: %v\npage text:\n%s", p.name, what, err, file, p.consoleErrors(), text)
}

// waitFor polls the JS predicate expr until it is truthy.
func (p *page) waitFor(what, expr string) {
	p.t.Helper()
	var ok bool
	began := time.Now()
	p.run("wait for "+what, chromedp.Poll("!!("+expr+")", &ok, chromedp.WithPollingInterval(50*time.Millisecond), chromedp.WithPollingTimeout(pageWait)))
	if d := time.Since(began); d > pageWait/3 {
		p.t.Logf("%s: waiting for %s took %v (the limit is %v)", p.name, what, d.Round(time.Millisecond), pageWait)
	}
}

// eval evaluates expr and decodes its value into out.
func (p *page) eval(expr string, out any) {
	p.t.Helper()
	p.run("evaluate "+expr, chromedp.Evaluate(expr, out))
}

// screenshot saves the page as name.png and returns the file.
func (p *page) screenshot(name string) string {
	p.b.seq++
	file := filepath.Join(p.b.shots, fileName(fmt.Sprintf("%s-%02d-%s-%s", p.t.Name(), p.b.seq, p.name, name))+".png")
	var buf []byte
	ctx, cancel := context.WithTimeout(p.ctx, 5*time.Second)
	defer cancel()
	if err := chromedp.Run(ctx, chromedp.CaptureScreenshot(&buf)); err != nil {
		p.t.Logf("%s: screenshot %s: %v", p.name, name, err)
		return ""
	}
	if err := os.WriteFile(file, buf, 0o644); err != nil {
		p.t.Logf("%s: write screenshot: %v", p.name, err)
	}
	return file
}

// fileName keeps the letters, digits, '-' and '_' of s (at most 100).
func fileName(s string) string {
	out := []rune{}
	for _, r := range s {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-', r == '_':
			out = append(out, r)
		case len(out) > 0 && out[len(out)-1] != '-':
			out = append(out, '-')
		}
	}
	return string(out[:min(len(out), 100)])
}

// js quotes s as a JavaScript string literal.
func js(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// register creates the account userID through the page's form and waits
// until the client is connected.
func (p *page) register(userID string) {
	p.t.Helper()
	p.run("register "+userID,
		chromedp.WaitVisible(`#register-form`, chromedp.ByQuery),
		chromedp.SendKeys(`#register-user`, userID, chromedp.ByQuery),
		chromedp.SendKeys(`#register-nickname`, strings.ToUpper(userID[:1])+userID[1:], chromedp.ByQuery),
		chromedp.SendKeys(`#register-password`, "plum-tart-9", chromedp.ByQuery),
		chromedp.Click(`#register-form button[type=submit]`, chromedp.ByQuery),
	)
	p.waitConnected()
	var me string
	p.eval(`document.getElementById('me').textContent`, &me)
	if me != userID {
		p.t.Fatalf("%s: signed in as %q, want %q", p.name, me, userID)
	}
}

func (p *page) waitConnected() {
	p.t.Helper()
	p.waitFor("connected", `document.querySelector('#conn[data-state="open"]') !== null && !document.getElementById('app').hidden`)
}

// startChat opens the single chat with userID from the sidebar form.
func (p *page) startChat(userID string) {
	p.t.Helper()
	p.run("start chat with "+userID,
		chromedp.SendKeys(`#new-chat-user`, userID, chromedp.ByQuery),
		chromedp.Click(`#new-chat button[type=submit]`, chromedp.ByQuery),
	)
	p.waitFor("chat with "+userID+" open", `document.getElementById('chat-title').textContent.includes(`+js(userID)+`) && !document.getElementById('composer').hidden`)
}

// openConversation clicks the conversation's entry in the list.
func (p *page) openConversation(convID string) {
	p.t.Helper()
	sel := `#conv-list li[data-conv-id=` + js(convID) + `] button`
	p.waitFor("conversation "+convID+" listed", `document.querySelector(`+js(sel)+`) !== null`)
	p.run("open "+convID, chromedp.Click(sel, chromedp.ByQuery))
	p.waitFor("conversation "+convID+" open", `document.querySelector(`+js(sel+`[aria-current="true"]`)+`) !== null`)
}

// send types text in the composer and presses Enter.
func (p *page) send(text string) {
	p.t.Helper()
	p.run("send "+text,
		chromedp.Focus(`#composer-input`, chromedp.ByQuery),
		chromedp.SendKeys(`#composer-input`, text+kb.Enter, chromedp.ByQuery),
	)
}

// messageExpr is a JS expression for the message element whose text
// includes text (null when absent).
func messageExpr(text string) string {
	return `[...document.querySelectorAll('#messages li.msg')].find(li => li.querySelector('.text') && li.querySelector('.text').textContent.includes(` + js(text) + `)) || null`
}

// waitMessage waits until a message containing text is shown and, when
// state is not empty, until its delivery state has reached state (states
// only move forward: sending, accepted, saved, delivered, read); "sending"
// and "failed" must match exactly.
func (p *page) waitMessage(text, state string) {
	p.t.Helper()
	cond := `(${m} !== null)`
	switch state {
	case "":
	case "sending", "failed":
		cond = `((${m}) !== null && (${m}).dataset.state === ` + js(state) + `)`
	default:
		cond = `((${m}) !== null && ['sending', 'accepted', 'saved', 'delivered', 'read'].indexOf((${m}).dataset.state) >= ` +
			`['sending', 'accepted', 'saved', 'delivered', 'read'].indexOf(` + js(state) + `))`
	}
	p.waitFor(fmt.Sprintf("message %q (state %q)", text, state), strings.ReplaceAll(cond, "${m}", messageExpr(text)))
}

// shownTexts returns the texts of the shown messages, in page order.
func (p *page) shownTexts() []string {
	p.t.Helper()
	var texts []string
	p.eval(`[...document.querySelectorAll('#messages li.msg .text')].map(e => e.textContent)`, &texts)
	return texts
}

// assertNoConsoleErrors fails when the page logged an error or threw.
func (p *page) assertNoConsoleErrors() {
	p.t.Helper()
	if errs := p.consoleErrors(); len(errs) > 0 {
		p.t.Errorf("%s: console errors: %v", p.name, errs)
	}
}
