package actions_test

import (
	"testing"

	"github.com/nexo-im/nexo/domain"
	"github.com/nexo-im/nexo/gateway/wire"
	"github.com/nexo-im/nexo/gateway/ws/wstest"
	"github.com/nexo-im/nexo/services/actions"
	"github.com/nexo-im/nexo/services/chat"
	"github.com/nexo-im/nexo/services/sync"
)

func TestQuotedReply(t *testing.T) {
	e := newEnv(t, envOpts{})
	e.addUsers("alice", "bob", "carol", "dave")
	g := e.createGroup("alice", "bob", "carol")
	conv := domain.GroupConversationID(g)
	orig := e.sendGroup("alice", g, "the original text")

	ack, err := e.sendReq("bob", chat.SendRequest{SessionType: 3, GroupID: g, Content: chat.ContentJSON{Text: "agreed"},
		Quote: &chat.QuoteRequest{Seq: orig}})
	if err != nil {
		t.Fatal(err)
	}
	e.waitSaved(conv, ack.Seq)
	q := e.pullOne("carol", conv, ack.Seq).Quote
	if q == nil || q.Seq != orig || q.SenderID != "alice" || q.MsgType != 101 || q.Preview != "the original text" || q.Status != "normal" {
		t.Fatalf("quote %+v", q)
	}
	// The snapshot is taken at accept: a later edit leaves it.
	if _, err := e.svc.Edit(bg, "alice", actions.EditRequest{ConversationID: conv, Seq: orig, Content: actions.EditContent{Text: "changed"}}); err != nil {
		t.Fatal(err)
	}
	if q := e.pullOne("carol", conv, ack.Seq).Quote; q.Preview != "the original text" {
		t.Fatalf("quote followed the edit: %+v", q)
	}
	// A recall of the quoted message: "unavailable", not the old text.
	if _, err := e.recall.Revoke(bg, "alice", sync.RevokeRequest{ConversationID: conv, Seq: orig}); err != nil {
		t.Fatal(err)
	}
	if q := e.pullOne("carol", conv, ack.Seq).Quote; q.Status != "unavailable" || q.Preview != "" || q.SenderID != "" {
		t.Fatalf("quote of a recalled message: %+v", q)
	}

	// Hostile: a seq the caller cannot see (before it joined), one never
	// issued, a recalled one, a notification, a bad seq.
	if _, err := e.groups.Join(bg, "dave", g); err != nil {
		t.Fatal(err)
	}
	other := e.sendGroup("bob", g, "visible")
	for _, seq := range []int64{ack.Seq, other + 1000, orig, 1} {
		_, err := e.sendReq("dave", chat.SendRequest{SessionType: 3, GroupID: g, Content: chat.ContentJSON{Text: "re"}, Quote: &chat.QuoteRequest{Seq: seq}})
		wantReason(t, err, wire.ReasonQuoteUnavailable)
	}
	_, err = e.sendReq("dave", chat.SendRequest{SessionType: 3, GroupID: g, Content: chat.ContentJSON{Text: "re"}, Quote: &chat.QuoteRequest{Seq: 0}})
	wantReason(t, err, wire.ReasonBadRequest)
	// ...and what it can see is fine.
	if _, err := e.sendReq("dave", chat.SendRequest{SessionType: 3, GroupID: g, Content: chat.ContentJSON{Text: "re"}, Quote: &chat.QuoteRequest{Seq: other}}); err != nil {
		t.Fatal(err)
	}
}

// TestQuoteThroughPipeline: with two-phase on, the snapshot travels in the
// stream entry, so the delivered push carries it, and the save stores it.
func TestQuoteThroughPipeline(t *testing.T) {
	e := newEnv(t, envOpts{mode: saveFirst})
	e.addUsers("alice", "bob")
	conv := domain.SingleConversationID("alice", "bob")
	orig := e.send("alice", "bob", "question?")
	ack, err := e.sendReq("bob", chat.SendRequest{SessionType: 1, RecvID: "alice", Content: chat.ContentJSON{Text: "answer"}, Quote: &chat.QuoteRequest{Seq: orig}})
	if err != nil {
		t.Fatal(err)
	}
	e.waitSaved(conv, ack.Seq)
	if q := e.pullOne("alice", conv, ack.Seq).Quote; q == nil || q.Preview != "question?" {
		t.Fatalf("stored quote %+v", q)
	}
	p := e.reg.WaitPush(t, "alice", wire.PushMsg, func(p wstest.Push) bool { return p.Int("seq") == ack.Seq })
	if q, _ := p.Data["quote"].(map[string]any); q == nil || q["preview"] != "question?" {
		t.Fatalf("the pushed reply carries no quote: %v", p)
	}
}
