package actions_test

import (
	"testing"

	"github.com/nexo-im/nexo/domain"
	"github.com/nexo-im/nexo/gateway/wire"
	"github.com/nexo-im/nexo/services/actions"
	"github.com/nexo-im/nexo/store"
)

// TestDeleteForSelf: the caller's pulls and conversation list leave the
// message out, its own devices hear of it in its own conversation, and no
// other member hears or loses anything.
func TestDeleteForSelf(t *testing.T) {
	e := newEnv(t, envOpts{})
	e.addUsers("alice", "bob")
	conv := domain.SingleConversationID("alice", "bob")
	s1 := e.send("alice", "bob", "one")
	s2 := e.send("bob", "alice", "two")

	res, err := e.svc.Delete(bg, "bob", actions.DeleteRequest{ConversationID: conv, Seqs: []int64{s2, s2}, Scope: actions.ScopeSelf})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Seqs) != 1 || res.Seqs[0] != s2 {
		t.Fatalf("answer %+v", res)
	}
	if m := e.pullOne("bob", conv, s2); m.Status != "deleted" || m.Content != nil || m.SenderID != "" {
		t.Fatalf("bob still sees %+v", m)
	}
	if m := e.pullOne("alice", conv, s2); m.Status != "normal" || m.Content.Text != "two" {
		t.Fatalf("alice lost the message: %+v", m)
	}
	// The conversation list's last message is bob's own view.
	latest, err := store.NewConversationRepo(e.db).LatestFor(bg, "bob", []store.SeqRange{{ConversationID: conv, After: 0, Upto: s2}})
	if err != nil || latest[conv].Seq != s1 {
		t.Fatalf("bob's latest is %+v, want seq %d (%v)", latest[conv], s1, err)
	}
	n := e.reg.WaitNotices(t, "bob", actions.MsgHideNotification, 1)[0]
	if n["conversation_id"] != conv || n["scope"] != "self" {
		t.Fatalf("hide notice %v", n)
	}
	// The notice was delivered to bob by the same push that would have
	// reached alice, had she been a recipient.
	if got := e.reg.Notices("alice", actions.MsgHideNotification); len(got) != 0 {
		t.Fatalf("alice heard of bob's delete for self: %v", got)
	}
}

func TestDeleteForEveryone(t *testing.T) {
	e := newEnv(t, envOpts{})
	e.addUsers("alice", "bob", "carol", "dave")
	g := e.createGroup("alice", "bob", "carol", "dave")
	conv := domain.GroupConversationID(g)
	byBob := e.sendGroup("bob", g, "secret")
	byCarol := e.sendGroup("carol", g, "mine")

	// Hostile: someone else's message; beyond max_seq; bad scope.
	_, err := e.svc.Delete(bg, "carol", actions.DeleteRequest{ConversationID: conv, Seqs: []int64{byBob}, Scope: actions.ScopeEveryone})
	wantReason(t, err, wire.ReasonDeleteNotAllowed)
	_, err = e.svc.Delete(bg, "bob", actions.DeleteRequest{ConversationID: conv, Seqs: []int64{byBob, byCarol + 1000}, Scope: actions.ScopeEveryone})
	wantReason(t, err, wire.ReasonBadSeq)
	_, err = e.svc.Delete(bg, "bob", actions.DeleteRequest{ConversationID: conv, Seqs: []int64{byCarol + 1000}, Scope: actions.ScopeSelf})
	wantReason(t, err, wire.ReasonBadSeq)
	_, err = e.svc.Delete(bg, "bob", actions.DeleteRequest{ConversationID: conv, Seqs: []int64{byBob}, Scope: "all"})
	wantReason(t, err, wire.ReasonBadRequest)
	// A notification (the group's creation notice at seq 1).
	_, err = e.svc.Delete(bg, "alice", actions.DeleteRequest{ConversationID: conv, Seqs: []int64{1}, Scope: actions.ScopeEveryone})
	wantReason(t, err, wire.ReasonDeleteNotAllowed)
	// All or nothing: byBob was not deleted by the refused requests.
	if m := e.pullOne("dave", conv, byBob); m.Status != "normal" {
		t.Fatalf("a refused delete changed %+v", m)
	}

	// The sender; then the owner (an admin) deletes carol's.
	if _, err := e.svc.Delete(bg, "bob", actions.DeleteRequest{ConversationID: conv, Seqs: []int64{byBob}, Scope: actions.ScopeEveryone}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.svc.Delete(bg, "alice", actions.DeleteRequest{ConversationID: conv, Seqs: []int64{byCarol}, Scope: actions.ScopeEveryone}); err != nil {
		t.Fatal(err)
	}
	for _, u := range []string{"alice", "bob", "carol", "dave"} {
		res, err := e.puller.Pull(bg, u, chatPull(conv, byBob, byCarol))
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Messages) != 2 {
			t.Fatalf("%s: seqs not contiguous: %+v", u, res.Messages)
		}
		for _, m := range res.Messages {
			if m.Status != "deleted" || m.Content != nil || m.SenderID == "" {
				t.Fatalf("%s sees %+v, want a tombstone with its metadata", u, m)
			}
		}
		if n := e.reg.WaitNotices(t, u, actions.MsgDeleteNotification, 2); n[0]["scope"] != "everyone" {
			t.Fatalf("%s: delete notice %v", u, n[0])
		}
	}
	// A deleted message takes no edit, no reaction, no recall content.
	_, err = e.svc.Edit(bg, "carol", actions.EditRequest{ConversationID: conv, Seq: byCarol, Content: actions.EditContent{Text: "x"}})
	wantReason(t, err, wire.ReasonMessageGone)
	_, err = e.svc.React(bg, "dave", actions.ReactionRequest{ConversationID: conv, Seq: byBob, Emoji: "👍", Op: actions.OpAdd})
	wantReason(t, err, wire.ReasonMessageGone)
	// Deleting again is not an error.
	if _, err := e.svc.Delete(bg, "bob", actions.DeleteRequest{ConversationID: conv, Seqs: []int64{byBob}, Scope: actions.ScopeEveryone}); err != nil {
		t.Fatal(err)
	}
}
