package app

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"github.com/nexo-im/nexo/domain"
	"github.com/nexo-im/nexo/store/storetest"
)

// TestWebTwoPeopleChat: two people in two browser contexts register, chat,
// and each sees the other's messages and the read state of its own (ticks
// move to read when the other opens the conversation).
func TestWebTwoPeopleChat(t *testing.T) {
	t.Parallel()
	_, base := webApp(t)
	b := newBrowser(t)
	alice := b.open("alice", base)
	bob := b.open("bob", base)
	alice.register("alice")
	bob.register("bob")
	conv := domain.SingleConversationID("alice", "bob")

	alice.startChat("bob")
	alice.send("Hello Bob <b>not bold</b>")
	alice.waitMessage("Hello Bob", "saved")
	alice.screenshot("sent")

	// Bob sees the conversation with an unread badge and the preview, then
	// opens it: the message shows, and Alice's tick moves to read.
	bob.waitFor("unread badge", `(() => { const li = document.querySelector('#conv-list li[data-conv-id="`+conv+`"]');
		return li && li.querySelector('.badge') && li.querySelector('.badge').textContent === '1' && li.textContent.includes('Hello Bob'); })()`)
	bob.screenshot("unread")
	bob.openConversation(conv)
	bob.waitMessage("Hello Bob <b>not bold</b>", "")
	var bold int
	bob.eval(`document.querySelectorAll('#messages b').length`, &bold)
	if bold != 0 {
		t.Errorf("message text was rendered as HTML")
	}
	alice.waitMessage("Hello Bob", "read")
	bob.waitFor("badge cleared", `!document.querySelector('#conv-list li[data-conv-id="`+conv+`"] .badge')`)

	// Bob answers while Alice has the chat open: she sees it at once and
	// her reading moves Bob's tick to read.
	bob.send("Hi Alice")
	alice.waitMessage("Hi Alice", "")
	bob.waitMessage("Hi Alice", "read")
	alice.send("How are you?")
	bob.waitMessage("How are you?", "")
	alice.waitMessage("How are you?", "read")
	alice.screenshot("conversation")
	bob.screenshot("conversation")

	if got, want := alice.shownTexts(), []string{"Hello Bob <b>not bold</b>", "Hi Alice", "How are you?"}; !slices.Equal(got, want) {
		t.Errorf("alice shows %q, want %q", got, want)
	}
	if got, want := bob.shownTexts(), []string{"Hello Bob <b>not bold</b>", "Hi Alice", "How are you?"}; !slices.Equal(got, want) {
		t.Errorf("bob shows %q, want %q", got, want)
	}

	// A send the server refuses shows the reason and a retry, which reuses
	// the message's client_msg_id.
	alice.run("send an oversized message", chromedp.Evaluate(`(() => {
		document.getElementById('composer-input').value = '😀'.repeat(15000); // 60,000 bytes > msg.max_body_bytes
		document.getElementById('composer').requestSubmit(); return true; })()`, nil))
	alice.waitFor("failed send", `(() => { const li = document.querySelector('#messages li[data-state="failed"]');
		return li && li.textContent.includes('Not sent') && li.textContent.includes('body_too_long') && li.querySelector('button[data-action="retry"]'); })()`)
	alice.screenshot("failed")
	var cmid, cmidAgain string
	alice.eval(`document.querySelector('#messages li[data-state="failed"]').dataset.clientMsgId`, &cmid)
	alice.run("retry", chromedp.Click(`#messages li[data-state="failed"] button[data-action="retry"]`, chromedp.ByQuery))
	alice.waitFor("failed again", `document.querySelectorAll('#messages li[data-state="failed"]').length === 1`)
	alice.eval(`document.querySelector('#messages li[data-state="failed"]').dataset.clientMsgId`, &cmidAgain)
	if cmid == "" || cmidAgain != cmid {
		t.Errorf("retry used client_msg_id %q, the first try %q", cmidAgain, cmid)
	}

	// History longer than a page: Bob's other device sends 60 more. After
	// a reload Alice's tab keeps its session, lists the conversation and
	// shows the newest page; "load earlier" brings the rest, in seq order.
	code, env := call(t, "POST", base+"/auth/login", `{"user_id":"bob","password":"password1","platform_id":1}`, "")
	if code != 200 {
		t.Fatalf("bob's second login: %d %v", code, env)
	}
	bobPhone := dialPlatform(t, base, "bob", dataField(env, "token"), 1)
	for i := 1; i <= 60; i++ {
		if r := bobPhone.send("alice", fmt.Sprint("bulk-", i), fmt.Sprintf("bulk %02d", i)); r.ErrCode != 0 {
			t.Fatalf("bulk send %d: %+v", i, r)
		}
	}
	alice.waitMessage("bulk 60", "")
	alice.run("reload", chromedp.Reload())
	alice.waitConnected()
	alice.openConversation(conv)
	alice.waitMessage("bulk 60", "")
	var shown int
	alice.eval(`document.querySelectorAll('#messages li.msg').length`, &shown)
	if shown >= 63 {
		t.Errorf("first page after reload shows %d messages; want one page (load earlier for the rest)", shown)
	}
	alice.run("load earlier", chromedp.Click(`#load-earlier`, chromedp.ByQuery))
	alice.waitFor("whole history", `!document.getElementById('history-start').hidden && document.getElementById('load-earlier').hidden`)
	want := []string{"Hello Bob <b>not bold</b>", "Hi Alice", "How are you?"}
	for i := 1; i <= 60; i++ {
		want = append(want, fmt.Sprintf("bulk %02d", i))
	}
	if got := alice.shownTexts(); !slices.Equal(got, want) {
		t.Errorf("after a reload and load earlier alice shows %d messages %q, want %q", len(got), got, want)
	}
	alice.screenshot("history")
	alice.assertNoConsoleErrors()
	bob.assertNoConsoleErrors()
}

// TestWebGroupOfThree: a group of three is created from the page; every
// member sees the creation notice and the chat; an @mention marks the
// mentioned member's conversation; an invitation, the member list, a
// recall and a member quitting show for the others.
func TestWebGroupOfThree(t *testing.T) {
	t.Parallel()
	_, base := webApp(t)
	user(t, base, "dave") // invited later; never opens a browser
	b := newBrowser(t)
	alice, bob, carol := b.open("alice", base), b.open("bob", base), b.open("carol", base)
	alice.register("alice")
	bob.register("bob")
	carol.register("carol")

	alice.run("create a group",
		chromedp.Click(`#new-group`, chromedp.ByQuery),
		chromedp.WaitVisible(`#group-dialog`, chromedp.ByQuery),
		chromedp.SendKeys(`#group-name`, "Trio", chromedp.ByQuery),
		chromedp.SendKeys(`#group-members`, "bob, carol", chromedp.ByQuery),
		chromedp.Click(`#group-form button[type=submit]`, chromedp.ByQuery),
	)
	alice.waitFor("group open", `document.getElementById('chat-title').textContent === 'Trio' && !document.getElementById('composer').hidden`)
	alice.waitFor("creation notice", `[...document.querySelectorAll('#messages li.system')].some(li => li.textContent === 'You created “Trio” with bob, carol')`)
	var conv string
	alice.eval(`nexo.client.current.id`, &conv)

	// Bob and Carol learn of the group by its notification, in the list.
	for _, p := range []*page{bob, carol} {
		p.waitFor("group listed", `(() => { const li = document.querySelector('#conv-list li[data-conv-id=`+js(conv)+`]'); return li && li.textContent.includes('Trio'); })()`)
	}
	bob.openConversation(conv)
	bob.waitFor("creation notice", `[...document.querySelectorAll('#messages li.system')].some(li => li.textContent === 'alice created “Trio” with you, carol')`)
	bob.send("Hi all")
	alice.waitMessage("Hi all", "")
	bob.waitMessage("Hi all", "saved") // Alice has the group open: her read receipt reaches Bob

	// A mention of Carol, who has not opened the group: her entry shows
	// the unread count and the mention marker; opening it highlights it.
	bob.send("@carol are you there?")
	carol.waitFor("mention marker", `(() => { const li = document.querySelector('#conv-list li[data-conv-id=`+js(conv)+`]');
		return li && li.querySelector('.mention-marker') && li.querySelector('.badge') && li.querySelector('.badge').textContent === '2'; })()`)
	carol.screenshot("mentioned")
	carol.openConversation(conv)
	carol.waitFor("mention highlighted", `(() => { const li = `+messageExpr("are you there?")+`; return li && li.classList.contains('mentioned') && li.querySelector('mark.mention.me'); })()`)
	carol.waitFor("marker cleared", `!document.querySelector('#conv-list li[data-conv-id=`+js(conv)+`] .mention-marker')`)
	carol.send("Yes!")
	alice.waitMessage("Yes!", "")
	bob.waitMessage("Yes!", "")

	// Alice invites Dave: everyone sees the notice, the member list has four.
	alice.run("invite dave",
		chromedp.Click(`#invite`, chromedp.ByQuery),
		chromedp.WaitVisible(`#invite-dialog`, chromedp.ByQuery),
		chromedp.SendKeys(`#invite-users`, "dave", chromedp.ByQuery),
		chromedp.Click(`#invite-form button[type=submit]`, chromedp.ByQuery),
	)
	bob.waitFor("invite notice", `[...document.querySelectorAll('#messages li.system')].some(li => li.textContent === 'alice invited dave')`)
	alice.run("show members", chromedp.Click(`#members`, chromedp.ByQuery))
	alice.waitFor("four members", `document.getElementById('members-dialog').open && document.querySelectorAll('#member-list li').length === 4 &&
		document.querySelector('#member-list li[data-user="alice"] .role').textContent === 'owner'`)
	alice.screenshot("members")
	alice.run("close members", chromedp.Click(`#members-dialog [data-close]`, chromedp.ByQuery))

	// A recall: Alice takes a message back; the others see it recalled.
	alice.send("wrong group, sorry")
	alice.waitMessage("wrong group, sorry", "saved")
	bob.waitMessage("wrong group, sorry", "")
	alice.run("recall", chromedp.Click(`#messages li[data-state] button[data-action="recall"]`, chromedp.ByQuery))
	for _, p := range []*page{alice, bob, carol} {
		p.waitFor("recalled", `[...document.querySelectorAll('#messages li.revoked .text')].some(e => e.textContent.includes('recalled')) &&
			!document.getElementById('messages').textContent.includes('wrong group, sorry')`)
	}

	// Carol leaves: the others see it inline; her composer closes.
	carol.run("leave", chromedp.Click(`#quit`, chromedp.ByQuery)) // the harness accepts the confirmation
	carol.waitFor("composer closed", `document.getElementById('composer-input').disabled && document.getElementById('composer-note').textContent.includes('left')`)
	alice.waitFor("leave notice", `[...document.querySelectorAll('#messages li.system')].some(li => li.textContent === 'carol left the group')`)
	alice.screenshot("group")
	bob.screenshot("group")
	carol.screenshot("left")
	for _, p := range []*page{alice, bob, carol} {
		p.assertNoConsoleErrors()
	}
}

// TestWebReconnectFillsTheGap: Alice's connection goes through a proxy the
// test cuts. While she is offline Bob sends two messages and she types
// one; when the proxy is back her client reconnects (backoff with jitter),
// fills the gap by pull, ACKs the contiguous prefix, and sends what she
// typed with its client_msg_id. Then: a reload restores the history, a
// token refresh reconnects with the new token, a second connection with
// her token kicks the page (it says why), and signing out ends the session.
func TestWebReconnectFillsTheGap(t *testing.T) {
	t.Parallel()
	_, base := webApp(t)
	proxy := storetest.NewProxy(t, strings.TrimPrefix(base, "http://"))
	b := newBrowser(t)
	alice := b.open("alice", "http://"+proxy.Addr())
	bob := b.open("bob", base)
	alice.register("alice")
	bob.register("bob")
	conv := domain.SingleConversationID("alice", "bob")

	alice.startChat("bob")
	alice.send("before the drop")
	bob.openConversation(conv)
	bob.waitMessage("before the drop", "")
	alice.waitMessage("before the drop", "read")

	proxy.Down()
	alice.waitFor("offline", `document.getElementById('conn').dataset.state === 'waiting'`)
	alice.screenshot("offline")
	bob.send("while you were away 1")
	bob.send("while you were away 2")
	bob.waitMessage("while you were away 2", "saved")
	alice.send("typed offline")
	alice.waitMessage("typed offline", "sending")
	proxy.Up()

	alice.waitConnected()
	alice.waitMessage("while you were away 2", "")
	alice.waitMessage("typed offline", "read")
	bob.waitMessage("typed offline", "")
	bob.waitMessage("while you were away 2", "read")
	want := []string{"before the drop", "while you were away 1", "while you were away 2", "typed offline"}
	if got := alice.shownTexts(); !slices.Equal(got, want) {
		t.Errorf("after the reconnect alice shows %q, want %q", got, want)
	}
	// The run she holds is contiguous up to the newest seq, and her
	// cursors never went past it.
	var run struct{ Hi, Max, Delivered, Read int }
	alice.eval(`(() => { const c = nexo.client.current; return {hi: c.hi, max: c.highestHeld(), delivered: c.deliveredSeq, read: c.readSeq}; })()`, &run)
	if run.Hi != 4 || run.Max != 4 || run.Read != 4 || run.Delivered != 4 {
		t.Errorf("alice holds %+v, want a contiguous run to seq 4 read and delivered", run)
	}
	alice.screenshot("reconnected")

	// A reload keeps the tab's session and restores the history.
	alice.run("reload", chromedp.Reload())
	alice.waitConnected()
	alice.openConversation(conv)
	alice.waitMessage("typed offline", "")
	if got := alice.shownTexts(); !slices.Equal(got, want) {
		t.Errorf("after a reload alice shows %q, want %q", got, want)
	}

	// A refresh replaces the token; the page reconnects with the new one
	// and keeps chatting; the old token is refused.
	var oldToken, newToken string
	alice.eval(`nexo.session.token`, &oldToken)
	alice.run("refresh the token", chromedp.Evaluate(`nexo.api.refresh().then(() => true)`, nil, func(p *runtime.EvaluateParams) *runtime.EvaluateParams {
		return p.WithAwaitPromise(true)
	}))
	alice.eval(`nexo.session.token`, &newToken)
	if newToken == "" || newToken == oldToken {
		t.Fatalf("token not refreshed")
	}
	if code, env := call(t, "GET", base+"/user/info", "", oldToken); code != 401 || env["err_msg"] != "token_revoked" {
		t.Errorf("old token after refresh: %d %v", code, env)
	}
	alice.waitConnected()
	alice.send("after the refresh")
	bob.waitMessage("after the refresh", "")
	alice.waitMessage("after the refresh", "read")

	// Another connection with her token takes over (login policy): the
	// page says why and offers to reconnect, which takes the session back.
	other := dial(t, base, "alice", newToken)
	alice.waitFor("kicked banner", `!document.getElementById('banner').hidden && document.getElementById('banner-text').textContent.includes('signed in on another tab')`)
	alice.screenshot("kicked")
	alice.run("reconnect", chromedp.Click(`#banner-action`, chromedp.ByQuery))
	alice.waitConnected()
	other.waitPushes(2002, "the kick of the test's connection", func(f []frame) bool { return len(f) > 0 })

	// A newer login of Alice on the web platform replaces the page's
	// token: the page says the session ended and offers to sign in; signing
	// in again brings the conversations back.
	if code, env := call(t, "POST", base+"/auth/login", `{"user_id":"alice","password":"password1","platform_id":5}`, ""); code != 200 {
		t.Fatalf("second web login: %d %v", code, env)
	}
	alice.waitFor("session ended", `!document.getElementById('signin').hidden && document.getElementById('signin-reason').textContent.includes('session ended')`)
	alice.screenshot("session-ended")
	alice.run("sign in again",
		chromedp.SendKeys(`#login-user`, "alice", chromedp.ByQuery),
		chromedp.SendKeys(`#login-password`, "password1", chromedp.ByQuery),
		chromedp.Click(`#login-form button[type=submit]`, chromedp.ByQuery),
	)
	alice.waitConnected()
	alice.eval(`nexo.session.token`, &newToken)
	alice.openConversation(conv)
	alice.waitMessage("after the refresh", "")

	// Signing out revokes the token and shows the sign-in page.
	alice.run("sign out", chromedp.Click(`#logout`, chromedp.ByQuery))
	alice.waitFor("sign-in page", `!document.getElementById('signin').hidden && document.getElementById('app').hidden && sessionStorage.length === 0`)
	if code, _ := call(t, "GET", base+"/user/info", "", newToken); code != 401 {
		t.Errorf("token after signing out: %d, want 401", code)
	}
	alice.assertNoConsoleErrors()
	bob.assertNoConsoleErrors()
}
