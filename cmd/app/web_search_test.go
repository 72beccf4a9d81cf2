package app

import (
	"fmt"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/nexo-im/nexo/domain"
)

// TestWebSearch: Bob searches his messages in the web client over all his
// conversations and inside the open one; the results mark the matched
// text (as text nodes: a message's markup stays text), and clicking one
// opens its conversation at that message, an older one than the first
// page holds.
func TestWebSearch(t *testing.T) {
	t.Parallel()
	b := newBrowser(t) // first: without Chromium the test skips, or fails under CI=true
	_, base := webApp(t)
	alice := b.open("alice", base)
	bob := b.open("bob", base)
	alice.register("alice")
	bob.register("bob")
	withAlice := domain.SingleConversationID("alice", "bob")
	notes := domain.SingleConversationID("bob", "bob")

	// The message to find is Alice's first; 60 more follow it, so it is
	// not on the page the conversation opens with (50 messages).
	alice.startChat("bob")
	const target = "Today <b>今天天气很好</b> in Paris"
	alice.send(target)
	alice.waitMessage(target, "saved")
	alice.run("send 60 more", chromedp.Evaluate(`(() => {
		const c = window.nexo.client;
		for (let i = 1; i <= 60; i++) c.send(c.current, 'filler message ' + i);
	})()`, nil))
	alice.waitMessage("filler message 60", "saved")

	// Bob's notes to himself: a second conversation that matches.
	bob.startChat("bob")
	bob.send("天气 for the weekend")
	bob.waitMessage("天气 for the weekend", "saved")

	// Over all conversations: both hits, each with its match marked. The
	// index is written just after the save: search again until it shows.
	bob.run("type the keyword", chromedp.SendKeys(`#search-input`, "天气", chromedp.ByQuery))
	bob.waitFor("two results", searchUntil(2))
	var marks []string
	bob.eval(`[...document.querySelectorAll('#search-results mark.hit')].map(m => m.textContent)`, &marks)
	if len(marks) != 2 || marks[0] != "天气" || marks[1] != "天气" {
		t.Errorf("marked %q, want 天气 twice", marks)
	}
	var shown struct {
		Text  string `json:"text"`
		Bolds int    `json:"bolds"`
	}
	bob.eval(`(() => {
		const b = document.querySelector('#search-results button[data-conv-id=`+js(withAlice)+`]');
		return {text: b.querySelector('.result-text').textContent, bolds: document.querySelectorAll('#search-results b').length};
	})()`, &shown)
	if shown.Text != target || shown.Bolds != 0 {
		t.Errorf("result shows %q with %d <b> elements, want the text %q as text", shown.Text, shown.Bolds, target)
	}
	bob.screenshot("results")

	// Inside the open conversation (his notes): only its hit.
	bob.run("search this conversation", chromedp.Click(`#search-scope`, chromedp.ByQuery))
	bob.waitFor("one result", searchUntil(1)+` && document.querySelector('#search-results button[data-conv-id=`+js(notes)+`]')`)

	// Back to all conversations; clicking Alice's message opens that
	// conversation scrolled to it, 60 messages up.
	bob.run("search everywhere", chromedp.Click(`#search-scope`, chromedp.ByQuery))
	bob.waitFor("two results again", searchUntil(2))
	var seq int
	bob.eval(`Number(document.querySelector('#search-results button[data-conv-id=`+js(withAlice)+`]').dataset.seq)`, &seq)
	bob.run("open the result", chromedp.Click(`#search-results button[data-conv-id=`+js(withAlice)+`]`, chromedp.ByQuery))
	found := fmt.Sprintf(`#messages li[data-seq="%d"][data-found]`, seq)
	bob.waitFor("the message at its seq", `document.querySelector(`+js(found)+`) !== null && document.querySelector(`+js(found)+`).textContent.includes(`+js(target)+`)`+
		` && document.querySelector(`+js(`#conv-list li[data-conv-id=`+withAlice+`] button[aria-current="true"]`)+`) !== null`)
	var inView bool
	bob.eval(`(() => {
		const r = document.querySelector(`+js(found)+`).getBoundingClientRect();
		const s = document.getElementById('scroller').getBoundingClientRect();
		return r.bottom > s.top && r.top < s.bottom;
	})()`, &inView)
	if !inView {
		t.Errorf("the found message (seq %d) is not scrolled into view", seq)
	}
	bob.screenshot("opened")
	alice.assertNoConsoleErrors()
	bob.assertNoConsoleErrors()
}

// searchUntil is a page condition: exactly n results are shown, the
// search submitted again every half second until then.
func searchUntil(n int) string {
	return fmt.Sprintf(`(() => {
		const shown = document.querySelectorAll('#search-results li').length;
		if (shown === %d) return true;
		if (!window.searchedAt || Date.now() - window.searchedAt > 500) {
			window.searchedAt = Date.now();
			document.getElementById('search-form').requestSubmit();
		}
		return false;
	})()`, n)
}
