package actions_test

import (
	"fmt"
	gosync "sync"
	"testing"
	"time"

	"github.com/nexo-im/nexo/configs"
	"github.com/nexo-im/nexo/domain"
	"github.com/nexo-im/nexo/gateway/wire"
	"github.com/nexo-im/nexo/services/actions"
	"github.com/nexo-im/nexo/services/chat"
	"github.com/nexo-im/nexo/services/sync"
)

func TestEditRules(t *testing.T) {
	e := newEnv(t, envOpts{})
	e.addUsers("alice", "bob")
	conv := domain.SingleConversationID("alice", "bob")
	seq := e.send("alice", "bob", "helo")

	// Someone else's message, an empty text, a seq beyond max_seq.
	_, err := e.svc.Edit(bg, "bob", actions.EditRequest{ConversationID: conv, Seq: seq, Content: actions.EditContent{Text: "x"}})
	wantReason(t, err, wire.ReasonEditNotAllowed)
	_, err = e.svc.Edit(bg, "alice", actions.EditRequest{ConversationID: conv, Seq: seq})
	wantReason(t, err, wire.ReasonBadRequest)
	_, err = e.svc.Edit(bg, "alice", actions.EditRequest{ConversationID: conv, Seq: seq + 100, Content: actions.EditContent{Text: "x"}})
	wantReason(t, err, wire.ReasonBadSeq)
	_, err = e.svc.Edit(bg, "carol", actions.EditRequest{ConversationID: conv, Seq: seq, Content: actions.EditContent{Text: "x"}})
	wantReason(t, err, wire.ReasonNotConversationMember)

	res, err := e.svc.Edit(bg, "alice", actions.EditRequest{ConversationID: conv, Seq: seq, Content: actions.EditContent{Text: "hello"}})
	if err != nil {
		t.Fatal(err)
	}
	if res.EditVersion != 1 || res.Content.Text != "hello" || res.EditedAt == 0 {
		t.Fatalf("edit answered %+v", res)
	}
	m := e.pullOne("bob", conv, seq)
	if m.Content.Text != "hello" || m.EditVersion != 1 || m.EditedAt != res.EditedAt {
		t.Fatalf("pull after edit: %+v", m)
	}
	// The notice reaches the peer and the editor's own devices.
	for _, u := range []string{"alice", "bob"} {
		n := e.reg.WaitNotices(t, u, actions.MsgEditNotification, 1)[0]
		if n["content"].(map[string]any)["text"] != "hello" || n["edit_version"].(float64) != 1 || int64(n["seq"].(float64)) != seq {
			t.Fatalf("%s got edit notice %v", u, n)
		}
	}
	hist, err := e.svc.Edits(bg, "bob", actions.EditsRequest{ConversationID: conv, Seq: seq})
	if err != nil {
		t.Fatal(err)
	}
	if len(hist.Versions) != 1 || hist.Versions[0].Content.Text != "helo" || hist.Versions[0].EditVersion != 0 {
		t.Fatalf("history %+v", hist)
	}

	// Not a text message.
	ack, err := e.sendReq("alice", chat.SendRequest{SessionType: 1, RecvID: "bob", MsgType: int(domain.MsgPicture), Content: chat.ContentJSON{Image: "https://x/y.png"}})
	if err != nil {
		t.Fatal(err)
	}
	e.waitSaved(conv, ack.Seq)
	_, err = e.svc.Edit(bg, "alice", actions.EditRequest{ConversationID: conv, Seq: ack.Seq, Content: actions.EditContent{Text: "x"}})
	wantReason(t, err, wire.ReasonEditNotAllowed)

	// Recalled: refused, and its history is no longer served.
	if _, err := e.recall.Revoke(bg, "alice", sync.RevokeRequest{ConversationID: conv, Seq: seq}); err != nil {
		t.Fatal(err)
	}
	_, err = e.svc.Edit(bg, "alice", actions.EditRequest{ConversationID: conv, Seq: seq, Content: actions.EditContent{Text: "again"}})
	wantReason(t, err, wire.ReasonMessageGone)
	if hist, _ := e.svc.Edits(bg, "bob", actions.EditsRequest{ConversationID: conv, Seq: seq}); len(hist.Versions) != 0 {
		t.Fatalf("history of a recalled message served: %+v", hist)
	}
}

func TestEditWindow(t *testing.T) {
	e := newEnv(t, envOpts{tweak: func(c *configs.Config) { c.Msg.EditWindow = time.Millisecond }})
	e.addUsers("alice", "bob")
	conv := domain.SingleConversationID("alice", "bob")
	seq := e.send("alice", "bob", "hi")
	deadline := time.Now().Add(5 * time.Second)
	for {
		_, err := e.svc.Edit(bg, "alice", actions.EditRequest{ConversationID: conv, Seq: seq, Content: actions.EditContent{Text: "x"}})
		if err != nil {
			wantReason(t, err, wire.ReasonEditTimeout)
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("edit still allowed long after a 1ms window")
		}
	}
}

// TestConcurrentEditsTotalOrder: 20 edits of one message at once get the
// versions 1..20, each once; the pull ends on version 20's text, and a
// device applying the notices in seq order ends on the same text.
func TestConcurrentEditsTotalOrder(t *testing.T) {
	e := newEnv(t, envOpts{})
	e.addUsers("alice", "bob")
	conv := domain.SingleConversationID("alice", "bob")
	seq := e.send("alice", "bob", "v0")
	const n = 20
	var wg gosync.WaitGroup
	versions := make([]int, n)
	errs := make([]error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res, err := e.svc.Edit(bg, "alice", actions.EditRequest{ConversationID: conv, Seq: seq, Content: actions.EditContent{Text: fmt.Sprint("edit ", i)}})
			versions[i], errs[i] = res.EditVersion, err
		}()
	}
	wg.Wait()
	seen := map[int]bool{}
	for i := range n {
		if errs[i] != nil {
			t.Fatal(errs[i])
		}
		if seen[versions[i]] || versions[i] < 1 || versions[i] > n {
			t.Fatalf("versions %v are not 1..%d each once", versions, n)
		}
		seen[versions[i]] = true
	}
	final := e.pullOne("bob", conv, seq)
	if final.EditVersion != n {
		t.Fatalf("pull shows version %d, want %d", final.EditVersion, n)
	}
	// Every device: the notices in seq order, keeping the highest version.
	for _, u := range []string{"alice", "bob"} {
		notices := e.reg.WaitNotices(t, u, actions.MsgEditNotification, n)
		lastVer, lastText := 0, ""
		for _, nt := range notices {
			if v := int(nt["edit_version"].(float64)); v > lastVer {
				lastVer, lastText = v, nt["content"].(map[string]any)["text"].(string)
			}
		}
		if lastVer != n || lastText != final.Content.Text {
			t.Fatalf("%s ends on version %d %q, the pull on %d %q", u, lastVer, lastText, final.EditVersion, final.Content.Text)
		}
	}
	hist, err := e.svc.Edits(bg, "alice", actions.EditsRequest{ConversationID: conv, Seq: seq})
	if err != nil || len(hist.Versions) != n {
		t.Fatalf("history has %d versions, want %d (%v)", len(hist.Versions), n, err)
	}
	for i, v := range hist.Versions {
		if v.EditVersion != i {
			t.Fatalf("history out of order: %+v", hist.Versions)
		}
	}
}
