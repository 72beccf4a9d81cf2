package app

import (
	"context"
	"strings"
	"testing"
	"time"

	cdpbrowser "github.com/chromedp/cdproto/browser"
	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/cdproto/serviceworker"
	"github.com/chromedp/cdproto/target"
	"github.com/chromedp/chromedp"
)

// TestWebPushServiceWorkerHandlesPushes: in Chromium, the service worker
// web/static/push-sw.js (registered the way push.js does) shows the
// notification of a push the test delivers, tagged per conversation, and
// closes it when a recall's silent update for that message arrives.
// Subscribing itself needs the browser's push service (not reachable
// here), so pushManager.subscribe is not exercised.
func TestWebPushServiceWorkerHandlesPushes(t *testing.T) {
	_, base := webApp(t)
	b := newBrowser(t)
	p := b.open("pia", base)
	p.grantNotifications(base)
	regs := make(chan serviceworker.RegistrationID, 8)
	chromedp.ListenTarget(p.ctx, func(ev any) {
		if e, ok := ev.(*serviceworker.EventWorkerRegistrationUpdated); ok {
			for _, r := range e.Registrations {
				if strings.HasSuffix(r.ScopeURL, "/assets/") && !r.IsDeleted {
					select {
					case regs <- r.RegistrationID:
					default:
					}
				}
			}
		}
	})
	p.run("enable the ServiceWorker domain", serviceworker.Enable())
	var ok bool
	p.run("register the worker", chromedp.Evaluate(`import('/assets/push.js').then((m) =>
		navigator.serviceWorker.register('/assets/push-sw.js', { scope: '/assets/' }).then(m.activated)).then(() => true)`, &ok,
		func(e *runtime.EvaluateParams) *runtime.EvaluateParams { return e.WithAwaitPromise(true) }))
	var reg serviceworker.RegistrationID
	select {
	case reg = <-regs:
	case <-time.After(pageWait):
		t.Fatal("no service worker registration reported")
	}
	shown := `(navigator.serviceWorker.getRegistration('/assets/').then((r) => r.getNotifications())
		.then((ns) => { window.__shown = ns.map((n) => n.title + '|' + n.body + '|' + n.tag); }), window.__shown || [])`
	p.run("deliver a message push", serviceworker.DeliverPushMessage(base, reg,
		`{"kind":"message","conversation_id":"si_pia_quinn","title":"Quinn","body":"hello from push","server_msg_id":"m1","seq":1,"badge":3}`))
	p.waitFor("the notification", shown+`.includes('Quinn|hello from push|nexo:si_pia_quinn')`)
	p.run("deliver the recall", serviceworker.DeliverPushMessage(base, reg,
		`{"kind":"recall","conversation_id":"si_pia_quinn","server_msg_id":"m1","seq":1,"badge":2}`))
	p.waitFor("the notification closed", `window.__shown && `+shown+`.length === 0`)
	p.assertNoConsoleErrors()
}

// grantNotifications allows notifications for origin in p's browser
// context, as a user's "Allow" would.
func (p *page) grantNotifications(origin string) {
	p.t.Helper()
	p.run("grant notifications", chromedp.ActionFunc(func(ctx context.Context) error {
		info, err := target.GetTargetInfo().Do(ctx)
		if err != nil {
			return err
		}
		exec := cdp.WithExecutor(ctx, chromedp.FromContext(ctx).Browser)
		return cdpbrowser.GrantPermissions([]cdpbrowser.PermissionType{cdpbrowser.PermissionTypeNotifications}).
			WithOrigin(origin).WithBrowserContextID(info.BrowserContextID).Do(exec)
	}))
}
