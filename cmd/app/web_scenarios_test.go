package app

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

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
	b := newBrowser(t) // first: without Chromium the test skips, or fails under CI=true
	_, base := webApp(t)
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
		return li && li.querySelector('.badge:not([hidden])') && li.querySelector('.badge:not([hidden])').textContent === '1' && li.textContent.includes('Hello Bob'); })()`)
	bob.screenshot("unread")
	bob.openConversation(conv)
	bob.waitMessage("Hello Bob <b>not bold</b>", "")
	var bold int
	bob.eval(`document.querySelectorAll('#messages b').length`, &bold)
	if bold != 0 {
		t.Errorf("message text was rendered as HTML")
	}
	alice.waitMessage("Hello Bob", "read")
	bob.waitFor("badge cleared", `!document.querySelector('#conv-list li[data-conv-id="`+conv+`"] .badge:not([hidden])')`)

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
	code, env := call(t, "POST", base+"/auth/login", `{"user_id":"bob","password":"plum-tart-9","platform_id":1}`, "")
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
	// Her client ACKed what it holds: the server's read cursor reaches the
	// newest seq (and nothing is left for an offline resend on reload).
	var token string
	alice.eval(`nexo.session.token`, &token)
	waitReadSeq(t, base, token, conv, 63)
	alice.run("reload", chromedp.Reload())
	alice.waitConnected()
	alice.openConversation(conv)
	alice.waitMessage("bulk 60", "")
	var shown int
	alice.eval(`document.querySelectorAll('#messages li.msg').length`, &shown)
	if shown >= 63 {
		t.Errorf("first page after reload shows %d messages; want one page (load earlier for the rest)", shown)
	}
	alice.waitFor("badge cleared on opening", `!document.querySelector('#conv-list li[data-conv-id="`+conv+`"] .badge:not([hidden])')`)
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

	// Pinning goes to the server: the entry shows it, and a reload keeps it.
	alice.run("pin", chromedp.Click(`#pin`, chromedp.ByQuery))
	pinned := `document.querySelector('#conv-list li[data-conv-id="` + conv + `"] .pin:not([hidden])') !== null`
	alice.waitFor("pinned", pinned+` && document.getElementById('pin').getAttribute('aria-pressed') === 'true'`)
	alice.run("reload again", chromedp.Reload())
	alice.waitConnected()
	alice.waitFor("still pinned", pinned)
	alice.assertNoConsoleErrors()
	bob.assertNoConsoleErrors()
}

// TestWebEmbeddedMode: what a newcomer gets from `make run` — the
// embedded default (SQLite and the in-process Redis) — serves the client,
// and two people chat with ticks moving to read.
func TestWebEmbeddedMode(t *testing.T) {
	t.Parallel()
	b := newBrowser(t)
	_, base := webAppWith(t, embeddedConfig(t))
	alice, bob := b.open("alice", base), b.open("bob", base)
	alice.register("alice")
	bob.register("bob")
	alice.startChat("bob")
	alice.send("Hi from make run")
	bob.openConversation(domain.SingleConversationID("alice", "bob"))
	bob.waitMessage("Hi from make run", "")
	alice.waitMessage("Hi from make run", "read")
	bob.send("It works")
	alice.waitMessage("It works", "")
	bob.waitMessage("It works", "read")
	alice.assertNoConsoleErrors()
	bob.assertNoConsoleErrors()
}

// TestWebGroupOfThree: a group of three is created from the page; every
// member sees the creation notice and the chat; an @mention marks the
// mentioned member's conversation; an invitation, the member list, a
// recall and a member quitting show for the others.
func TestWebGroupOfThree(t *testing.T) {
	t.Parallel()
	b := newBrowser(t)
	_, base := webApp(t)
	// Dave is invited later and never opens a browser.
	if code, env := call(t, "POST", base+"/user/register", `{"user_id":"dave","nickname":"Dave","password":"plum-tart-9"}`, ""); code != 200 {
		t.Fatalf("register dave: %d %v", code, env)
	}
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
	alice.waitFor("creation notice", `[...document.querySelectorAll('#messages li.system')].some(li => li.textContent === 'You created “Trio” with Bob, Carol')`)
	var conv string
	alice.eval(`nexo.client.current.id`, &conv)

	// Bob and Carol learn of the group by its notification, in the list.
	for _, p := range []*page{bob, carol} {
		p.waitFor("group listed", `(() => { const li = document.querySelector('#conv-list li[data-conv-id=`+js(conv)+`]'); return li && li.textContent.includes('Trio'); })()`)
	}
	bob.openConversation(conv)
	bob.waitFor("creation notice", `[...document.querySelectorAll('#messages li.system')].some(li => li.textContent === 'Alice created “Trio” with you, Carol')`)
	bob.send("Hi all")
	alice.waitMessage("Hi all", "")
	// Bubbles show the sender's nickname, not the user ID.
	alice.waitFor("sender nickname", `(() => { const li = `+messageExpr("Hi all")+`; return li && li.querySelector('.sender').textContent === 'Bob'; })()`)
	bob.waitMessage("Hi all", "read") // Alice has the group open: her read receipt reaches Bob
	// A mention of Carol, who has not opened the group: her entry shows
	// the unread count and the mention marker; opening it highlights it.
	bob.send("@carol are you there?")
	carol.waitFor("mention marker", `(() => { const li = document.querySelector('#conv-list li[data-conv-id=`+js(conv)+`]');
		return li && li.querySelector('.mention-marker:not([hidden])') && li.querySelector('.badge:not([hidden])') && li.querySelector('.badge:not([hidden])').textContent === '2'; })()`)
	carol.screenshot("mentioned")
	carol.openConversation(conv)
	carol.waitFor("mention highlighted", `(() => { const li = `+messageExpr("are you there?")+`; return li && li.classList.contains('mentioned') && li.querySelector('mark.mention.me'); })()`)
	carol.waitFor("marker cleared", `!document.querySelector('#conv-list li[data-conv-id=`+js(conv)+`] .mention-marker:not([hidden])')`)
	// Typing shows in the others' chat header (WS 1103 → 2103, never stored).
	carol.run("type", chromedp.SendKeys(`#composer-input`, "Ye", chromedp.ByQuery))
	bob.waitFor("typing shown", `document.getElementById('chat-sub').textContent === 'Carol is typing…'`)
	carol.send("s!")
	alice.waitMessage("Yes!", "")
	bob.waitMessage("Yes!", "")

	// Alice invites Dave: everyone sees the notice, the member list has four.
	alice.run("invite dave",
		chromedp.Click(`#invite`, chromedp.ByQuery),
		chromedp.WaitVisible(`#invite-dialog`, chromedp.ByQuery),
		chromedp.SendKeys(`#invite-users`, "dave", chromedp.ByQuery),
		chromedp.Click(`#invite-form button[type=submit]`, chromedp.ByQuery),
	)
	bob.waitFor("invite notice", `[...document.querySelectorAll('#messages li.system')].some(li => li.textContent === 'Alice invited Dave')`)
	alice.waitFor("invite done", `!document.getElementById('invite-dialog').open && document.getElementById('notices').textContent.includes('Invited dave')`)
	alice.run("show members", chromedp.Click(`#members`, chromedp.ByQuery))
	alice.waitFor("four members", `document.getElementById('members-dialog').open && document.querySelectorAll('#member-list li').length === 4 &&
		document.querySelector('#member-list li[data-user="alice"] .role').textContent === 'owner'`)
	alice.screenshot("members")
	alice.run("close members", chromedp.Click(`#members-dialog [data-close]`, chromedp.ByQuery))

	// A recall: Alice takes a message back; the others see it recalled.
	alice.send("wrong group, sorry")
	alice.waitMessage("wrong group, sorry", "read")
	bob.waitMessage("wrong group, sorry", "")
	alice.run("recall", chromedp.Click(`#messages li[data-state] button[data-action="recall"]`, chromedp.ByQuery))
	for _, p := range []*page{alice, bob, carol} {
		p.waitFor("recalled", `[...document.querySelectorAll('#messages li.revoked .text')].some(e => e.textContent.includes('recalled')) &&
			!document.getElementById('messages').textContent.includes('wrong group, sorry')`)
	}

	// "Read by" lists who read Bob's first message (GET /msg/read_by
	// through the SDK): both others have.
	bob.clickIn("Hi all", `button[data-action="read-by"]`)
	bob.waitFor("the read-by list", `document.getElementById('readby-dialog').open &&
		document.querySelector('#readby-list li[data-user="alice"][data-read="true"]') !== null &&
		document.querySelector('#readby-list li[data-user="carol"][data-read="true"]') !== null &&
		document.getElementById('readby-summary').textContent === 'Read by 2 of 2'`)
	bob.run("close the read-by list", chromedp.Click(`#readby-dialog [data-close]`, chromedp.ByQuery))
	bob.waitFor("the read-by list closed", `!document.getElementById('readby-dialog').open`)

	// Carol leaves: the others see it inline; her composer closes.
	carol.run("leave", chromedp.Click(`#quit`, chromedp.ByQuery)) // the harness accepts the confirmation
	carol.waitFor("composer closed", `document.getElementById('composer-input').disabled && document.getElementById('composer-note').textContent.includes('left')`)
	alice.waitFor("leave notice", `[...document.querySelectorAll('#messages li.system')].some(li => li.textContent === 'Carol left the group')`)
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
	b := newBrowser(t)
	_, base := webApp(t)
	proxy := storetest.NewProxy(t, strings.TrimPrefix(base, "http://"))
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
	if code, env := call(t, "POST", base+"/auth/login", `{"user_id":"alice","password":"plum-tart-9","platform_id":5}`, ""); code != 200 {
		t.Fatalf("second web login: %d %v", code, env)
	}
	alice.waitFor("session ended", `!document.getElementById('signin').hidden && document.getElementById('signin-reason').textContent.includes('session ended')`)
	alice.screenshot("session-ended")
	alice.run("sign in again",
		chromedp.SendKeys(`#login-user`, "alice", chromedp.ByQuery),
		chromedp.SendKeys(`#login-password`, "plum-tart-9", chromedp.ByQuery),
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

// waitReadSeq polls GET /msg/newest_seq until the token's user has read
// conv up to seq.
func waitReadSeq(t *testing.T, base, token, conv string, seq int) {
	t.Helper()
	deadline := time.After(pageWait)
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		code, env := call(t, "GET", base+"/msg/newest_seq?conversation_ids="+conv, "", token)
		d, _ := env["data"].(map[string]any)
		convs, _ := d["conversations"].(map[string]any)
		c, _ := convs[conv].(map[string]any)
		if code == 200 && c["read_seq"] == float64(seq) {
			return
		}
		select {
		case <-tick.C:
		case <-deadline:
			t.Fatalf("read_seq of %s never reached %d: %d %v", conv, seq, code, env)
		}
	}
}

// TestWebClientModel runs the client's state rules in the browser, on the
// modules the page loads: dedupe by seq, placeholders, the contiguous run
// and its gaps, own message states and receipts, a seq moved by the save
// stage, recall never undone, the SDK's backoff bounds as the page loads
// them, and conversation IDs equal to domain's.
func TestWebClientModel(t *testing.T) {
	t.Parallel()
	b := newBrowser(t)
	_, base := webApp(t)
	p := b.open("model", base)
	ids := map[string]string{}
	for _, pair := range [][2]string{{"alice", "bob"}, {"bob", "alice"}, {"a_b", "c"}, {"a", "b_c"}, {"x-1", "x_1"}, {"me", "me"}} {
		ids[pair[0]+" "+pair[1]] = domain.SingleConversationID(pair[0], pair[1])
	}
	idsJSON, _ := json.Marshal(ids)
	script := `(async () => {
	const { Conversation } = await import('/assets/conversation.js');
	const { backoffDelay } = await import('/assets/socket.js');
	const { singleConversationID, parseConversationID } = await import('/assets/ids.js');
	const fails = [];
	const eq = (what, got, want) => { if (JSON.stringify(got) !== JSON.stringify(want)) fails.push(what + ': got ' + JSON.stringify(got) + ', want ' + JSON.stringify(want)); };
	const msg = (seq, from, extra = {}) => ({ seq, sender_id: from, status: 'normal', msg_type: 101, content: { text: 'm' + seq }, ...extra });

	let c = new Conversation('si_alice_bob', 'alice');
	eq('peer', c.peerID, 'bob');
	c.anchor(0);
	eq('first put is new', c.put(msg(1, 'bob')), true);
	eq('repeat is not new', c.put(msg(1, 'bob')), false);
	c.put(msg(3, 'bob'));
	eq('run stops at the gap', c.hi, 1);
	eq('gap', c.gap(), [2, 2]);
	eq('placeholder is not new', c.put({ seq: 2, status: 'unavailable' }), false);
	eq('placeholder closes the gap', [c.hi, c.gap()], [3, null]);
	eq('placeholders are not shown', c.visible().map((m) => m.seq), [1, 3]);
	eq('a real message replaces a placeholder', c.put(msg(2, 'bob')), true);
	c.put(msg(5, 'bob'));
	c.put(msg(4, 'bob'));
	eq('ordered by seq, not arrival', c.visible().map((m) => m.seq), [1, 2, 3, 4, 5]);
	eq('run after out-of-order arrival', c.hi, 5);

	c.put(msg(6, 'bob', { status: 'revoked', content: undefined }));
	c.put(msg(6, 'bob'));
	eq('a recall is not undone by a stale copy', c.msgs.get(6).status, 'revoked');

	// Own message: pending, accepted at 7, receipts raise it, never lower.
	const own = { client_msg_id: 'c1', sender_id: 'alice', status: 'normal', msg_type: 101, content: { text: 'mine' }, state: 'sending', createdAt: 1 };
	c.pending.set('c1', own);
	eq('sending', c.stateOf(own), 'sending');
	own.state = 'accepted';
	c.place(own, 7);
	eq('accepted at its seq', [c.stateOf(own), c.hi, c.pending.size], ['accepted', 7, 0]);
	c.receipt('delivered', 'bob', 7);
	eq('delivered receipt', c.stateOf(own), 'delivered');
	c.receipt('read', 'bob', 6);
	eq('read below it', c.stateOf(own), 'delivered');
	c.receipt('read', 'alice', 9);
	eq('own cursor is no receipt', c.stateOf(own), 'delivered');
	c.receipt('read', 'bob', 7);
	eq('read receipt', c.stateOf(own), 'read');
	c.put({ seq: 7, sender_id: 'alice', client_msg_id: 'c1', status: 'normal', msg_type: 101, content: { text: 'mine' } });
	eq('a pulled copy keeps one object', [c.msgs.get(7) === own, own.state], [true, 'saved']);
	// The save stage gave it another seq: the old one reads as unavailable.
	c.place(own, 8);
	eq('moved seq', [c.msgs.get(7).status, c.msgs.get(8) === own, c.hi], ['unavailable', true, 8]);

	// Group: readers of an own message.
	const g = new Conversation('sg_g1', 'alice');
	g.anchor(0);
	const gm = { client_msg_id: 'g1', sender_id: 'alice', status: 'normal', state: 'saved', msg_type: 101 };
	g.place(gm, 1);
	g.receipt('read', 'bob', 1);
	g.receipt('read', 'carol', 3);
	g.receipt('delivered', 'dave', 5);
	eq('group readers', [g.readersOf(gm), g.stateOf(gm)], [2, 'read']);
	// Read counts (2104) alone make it read; the higher of the two counts.
	const gm2 = { client_msg_id: 'g2', sender_id: 'alice', status: 'normal', state: 'saved', msg_type: 101 };
	g.place(gm2, 6);
	eq('group unread', [g.readersOf(gm2), g.stateOf(gm2)], [0, 'saved']);
	gm2.readCount = 3;
	eq('group read count', [g.readersOf(gm2), g.stateOf(gm2)], [3, 'read']);
	g.receipt('read', 'bob', 6);
	eq('count above receipts', g.readersOf(gm2), 3);

	// The SDK's backoff (docs/sdk.md): full jitter, uniform in [0, min(30 s, 500 ms·2ⁿ)).
	for (let n = 0; n < 12; n++) {
		const d = Math.min(30000, 500 * 2 ** n);
		const lo = backoffDelay(n, 500, 30000, () => 0), hi = backoffDelay(n, 500, 30000, () => 0.999999);
		eq('backoff ' + n, [lo, hi], [0, Math.floor(0.999999 * d)]);
	}
	const ids = ` + string(idsJSON) + `;
	for (const [pair, want] of Object.entries(ids)) {
		const [a, b] = pair.split(' ');
		eq('conversation ID ' + pair, singleConversationID(a, b), want);
		const p = parseConversationID(want);
		eq('parse ' + want, p && [...p.peers].sort(), [a, b].sort());
	}
	return fails;
})()`
	var fails []string
	p.run("run the model checks", chromedp.Evaluate(script, &fails, func(e *runtime.EvaluateParams) *runtime.EvaluateParams {
		return e.WithAwaitPromise(true)
	}))
	for _, f := range fails {
		t.Error(f)
	}
	p.assertNoConsoleErrors()
}
