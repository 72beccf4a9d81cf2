package app

import (
	"slices"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/nexo-im/nexo/domain"
)

// clickIn clicks the button matching sel inside the message that shows text.
func (p *page) clickIn(text, sel string) {
	p.t.Helper()
	expr := `(() => { const li = ` + messageExpr(text) + `; const b = li && li.querySelector(` + js(sel) + `); if (b) b.click(); return !!b; })()`
	p.waitFor("button "+sel+" in "+text, expr)
}

// TestWebMessageActions: in the page, Alice edits her message in place
// (Bob sees the new text marked "edited"), Bob reacts (a chip with the
// count on both sides, his marked as his), replies with a quote of it,
// Alice deletes her message for everyone (a tombstone for Bob) and Bob
// deletes the reply for himself only (gone for him, still there for Alice).
func TestWebMessageActions(t *testing.T) {
	t.Parallel()
	b := newBrowser(t) // first: without Chromium the test skips, or fails under CI=true
	_, base := webApp(t)
	alice := b.open("alice", base)
	bob := b.open("bob", base)
	alice.register("alice")
	bob.register("bob")
	conv := domain.SingleConversationID("alice", "bob")

	alice.startChat("bob")
	alice.send("helo bob")
	alice.waitMessage("helo bob", "saved")
	bob.openConversation(conv)
	bob.waitMessage("helo bob", "")

	// Edit in place.
	alice.clickIn("helo bob", `button[data-action="edit"]`)
	alice.waitFor("the edit box", `document.querySelector('#messages .edit-input') !== null`)
	alice.run("type the new text", chromedp.Evaluate(`(() => { const a = document.querySelector('#messages .edit-input'); a.value = 'hello bob'; a.closest('li').querySelector('button[data-action="save-edit"]').click(); })()`, nil))
	for _, p := range []*page{alice, bob} {
		p.waitFor("the edited text", `(() => { const li = `+messageExpr("hello bob")+`; return li && li.querySelector('.edited') !== null; })()`)
	}

	// A reaction: a chip with its count on both sides.
	bob.clickIn("hello bob", `button[data-action="react"][data-emoji="👍"]`)
	for _, p := range []*page{alice, bob} {
		p.waitFor("the reaction chip", `(() => { const li = `+messageExpr("hello bob")+`; const c = li && li.querySelector('.reactions .chip'); return c && c.textContent === '👍 1'; })()`)
	}
	var mine []bool
	for _, p := range []*page{alice, bob} {
		var m bool
		p.eval(`(`+messageExpr("hello bob")+`).querySelector('.reactions .chip').classList.contains('mine')`, &m)
		mine = append(mine, m)
	}
	if !slices.Equal(mine, []bool{false, true}) {
		t.Errorf("the chip is marked as one's own for [alice bob] = %v, want [false true]", mine)
	}

	// A reply quotes the message.
	bob.clickIn("hello bob", `button[data-action="reply"]`)
	bob.waitFor("the reply bar", `!document.getElementById('reply-bar').hidden`)
	bob.send("a reply")
	bob.waitMessage("a reply", "saved")
	for _, p := range []*page{alice, bob} {
		p.waitFor("the quote", `(() => { const li = `+messageExpr("a reply")+`; const q = li && li.querySelector('blockquote.quote'); return q && q.textContent.includes('hello bob'); })()`)
	}

	// Delete for everyone: a tombstone for Bob.
	alice.clickIn("hello bob", `button[data-action="delete-menu"]`)
	alice.clickIn("hello bob", `button[data-action="delete-everyone"]`)
	for _, p := range []*page{alice, bob} {
		p.waitFor("the tombstone", `[...document.querySelectorAll('#messages li.msg .text')].some((e) => e.textContent === 'This message was deleted')`)
	}

	// Delete for me: gone for Bob only.
	bob.clickIn("a reply", `button[data-action="delete-menu"]`)
	bob.clickIn("a reply", `button[data-action="delete-self"]`)
	bob.waitFor("the reply gone", messageExpr("a reply")+` === null`)
	if got := alice.shownTexts(); !slices.Contains(got, "a reply") {
		t.Errorf("alice shows %q: bob's delete for himself removed it for her", got)
	}
	alice.assertNoConsoleErrors()
	bob.assertNoConsoleErrors()
}
