package app

import (
	"bytes"
	"image"
	"image/color"
	"image/png"
	"os"
	"path/filepath"
	"testing"

	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"github.com/nexo-im/nexo/domain"
)

// TestWebMedia: Alice attaches a picture with the Attach button (a
// progress bar shows while it uploads), drops a file on the chat and
// pastes a picture into the message box; Bob sees both pictures as inline
// thumbnails linking to their originals and the file as a download link
// with its name and size, and the link gives the file's bytes.
func TestWebMedia(t *testing.T) {
	t.Parallel()
	b := newBrowser(t) // first: without Chromium the test skips, or fails under CI=true
	cfg := realConfig(t)
	cfg.Objects.Backend, cfg.Objects.Local.Dir = "local", t.TempDir()
	_, base := webAppWith(t, cfg)
	alice := b.open("alice", base)
	bob := b.open("bob", base)
	alice.register("alice")
	bob.register("bob")
	conv := domain.SingleConversationID("alice", "bob")
	alice.startChat("bob")
	alice.send("pictures follow")
	alice.waitMessage("pictures follow", "saved")
	bob.openConversation(conv)
	bob.waitMessage("pictures follow", "")

	// A 640×480 PNG on disk for the file chooser.
	img := image.NewRGBA(image.Rect(0, 0, 640, 480))
	for x := 0; x < 640; x++ {
		for y := 0; y < 480; y++ {
			img.Set(x, y, color.RGBA{uint8(x), uint8(y), 200, 255})
		}
	}
	var buf bytes.Buffer
	if err := png.Encode(&buf, img); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "sunset.png")
	if err := os.WriteFile(file, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}

	// Watch for the progress bar, then attach.
	alice.run("watch for progress", chromedp.Evaluate(`window.__progress = false; new MutationObserver(() => {
		if (document.querySelector('#messages progress.upload-progress')) window.__progress = true; }).observe(document.getElementById('messages'), {subtree: true, childList: true}); true`, nil))
	alice.run("attach the picture", chromedp.SetUploadFiles(`#attach-input`, []string{file}, chromedp.ByQuery))
	thumbShown := `(() => { const imgs = [...document.querySelectorAll('#messages li.msg a.media.image img.thumb')];
		return imgs.length >= N && imgs.slice(0, N).every((i) => i.complete && i.naturalWidth > 0 && i.closest('a').href.includes('/object/')); })()`
	alice.waitFor("alice's thumbnail", replaceN(thumbShown, "1"))
	alice.waitFor("the picture saved", `['saved', 'delivered', 'read'].includes(document.querySelector('#messages li.msg img.thumb').closest('li').dataset.state)`)
	bob.waitFor("bob's thumbnail", replaceN(thumbShown, "1"))
	var progressed bool
	alice.eval(`window.__progress`, &progressed)
	if !progressed {
		t.Errorf("no upload progress bar was shown")
	}
	var dims []int
	bob.eval(`(() => { const i = document.querySelector('#messages img.thumb'); return [i.naturalWidth, i.naturalHeight]; })()`, &dims)
	if len(dims) != 2 || dims[0] > 320 || dims[0] == 0 {
		t.Errorf("bob's thumbnail is %v, want the server's thumbnail (at most 320 wide)", dims)
	}

	// Drop a text file on the chat: a download link for Bob.
	alice.run("drop a file", chromedp.Evaluate(`(() => {
		const dt = new DataTransfer();
		dt.items.add(new File(['meeting at noon\n'], 'notes.txt', { type: 'text/plain' }));
		document.getElementById('scroller').dispatchEvent(new DragEvent('drop', { dataTransfer: dt, bubbles: true, cancelable: true }));
		return true; })()`, nil))
	bob.waitMessage("notes.txt", "")
	bob.waitFor("the download link", `(() => { const a = document.querySelector('#messages a.download'); return a && a.href.includes('/object/') && a.closest('p').textContent.includes('(16 B)'); })()`)
	var body string
	bob.run("download it", chromedp.Evaluate(`fetch(document.querySelector('#messages a.download').href).then((r) => r.text())`, &body,
		func(e *runtime.EvaluateParams) *runtime.EvaluateParams { return e.WithAwaitPromise(true) }))
	if body != "meeting at noon\n" {
		t.Errorf("the download gave %q", body)
	}

	// Paste a picture into the message box.
	alice.run("paste a picture", chromedp.Evaluate(`(async () => {
		const c = document.createElement('canvas'); c.width = 50; c.height = 40;
		c.getContext('2d').fillRect(0, 0, 50, 40);
		const blob = await new Promise((r) => c.toBlob(r, 'image/png'));
		const dt = new DataTransfer();
		dt.items.add(new File([blob], 'pasted.png', { type: 'image/png' }));
		document.getElementById('composer-input').dispatchEvent(new ClipboardEvent('paste', { clipboardData: dt, bubbles: true, cancelable: true }));
		return true; })()`, nil, func(e *runtime.EvaluateParams) *runtime.EvaluateParams { return e.WithAwaitPromise(true) }))
	bob.waitFor("bob's second thumbnail", replaceN(thumbShown, "2"))
	alice.assertNoConsoleErrors()
	bob.assertNoConsoleErrors()
}

func replaceN(expr, n string) string {
	return string(bytes.ReplaceAll([]byte(expr), []byte("N"), []byte(n)))
}
