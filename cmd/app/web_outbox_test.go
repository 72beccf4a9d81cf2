package app

import (
	"slices"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/nexo-im/nexo/domain"
)

// TestWebReloadResends: a message typed while the page has no connection
// waits in the SDK's IndexedDB outbox; after a reload the next page shows
// it as sending, the SDK sends it with its client_msg_id, and the peer gets
// it once.
func TestWebReloadResends(t *testing.T) {
	t.Parallel()
	b := newBrowser(t) // first: without Chromium the test skips, or fails under CI=true
	_, base := webApp(t)
	alice := b.open("alice", base)
	bob := b.open("bob", base)
	alice.register("alice")
	bob.register("bob")
	conv := domain.SingleConversationID("alice", "bob")

	alice.startChat("bob")
	alice.send("before the reload")
	alice.waitMessage("before the reload", "saved")

	alice.run("drop the connection", chromedp.Evaluate(`nexo.client.sdk.disconnect()`, nil))
	alice.waitFor("disconnected", `nexo.client.sdk.state === 'disconnected'`)
	alice.send("typed before the reload")
	alice.waitMessage("typed before the reload", "sending")
	// The outbox write is asynchronous: reload once IndexedDB holds it.
	alice.run("read the outbox", chromedp.Evaluate(`nexo.client.sdk.outbox.list().then((l) => { window.outboxed = l.map((r) => r.body.content.text); })`, nil))
	alice.waitFor("outboxed", `(window.outboxed || []).includes('typed before the reload')`)

	alice.run("reload", chromedp.Reload())
	alice.waitConnected()
	alice.openConversation(conv)
	alice.waitMessage("typed before the reload", "saved")
	bob.openConversation(conv)
	bob.waitMessage("typed before the reload", "")
	alice.waitMessage("typed before the reload", "read")
	want := []string{"before the reload", "typed before the reload"}
	if got := bob.shownTexts(); !slices.Equal(got, want) {
		t.Errorf("bob shows %q, want %q", got, want)
	}
	if got := alice.shownTexts(); !slices.Equal(got, want) {
		t.Errorf("alice shows %q after the reload, want %q", got, want)
	}
	// Saved: the record leaves the outbox (an asynchronous delete).
	alice.waitFor("the outbox empty", `(nexo.client.sdk.outbox.list().then((l) => { window.left = l.length; }), window.left === 0)`)
	alice.assertNoConsoleErrors()
	bob.assertNoConsoleErrors()
}
