package sync_test

import (
	"fmt"
	"slices"
	"testing"

	"github.com/nexo-im/nexo/domain"
	"github.com/nexo-im/nexo/gateway/wire"
	"github.com/nexo-im/nexo/gateway/ws/wstest"
	"github.com/nexo-im/nexo/services/sync"
)

func entry(t *testing.T, e *env, user, conv string) sync.ConversationJSON {
	t.Helper()
	res, err := e.convs.List(bg, user, 0, sync.MaxListLimit)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range res.Conversations {
		if c.ConversationID == conv {
			return c
		}
	}
	t.Fatalf("%s's list has no %s: %+v", user, conv, res)
	return sync.ConversationJSON{}
}

// TestUnreadCounts: unread counts follow sends, reads and the caller's own
// messages; notifications and revoked messages are not unread; mentions
// of the caller or "all" are counted until read.
func TestUnreadCounts(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOpts{})
	e.addUsers("alice", "bob", "carol")
	ab := domain.SingleConversationID("alice", "bob")
	steps := []struct {
		name               string
		send               func() int64
		user               string
		unread, mentions   int64
		readSeq, latestSeq int64
	}{
		{"bob: alice's three", func() int64 { e.send("alice", "bob"); e.send("alice", "bob"); return e.send("alice", "bob") },
			"bob", 3, 0, 0, 3},
		{"alice: none, all three are hers", nil, "alice", 0, 0, 3, 3},
		// Sending marks everything before as read (a sender has read the
		// conversation up to its own message).
		{"bob replied twice: none", func() int64 { e.send("bob", "alice"); return e.send("bob", "alice", "alice") },
			"bob", 0, 0, 5, 5},
		{"alice: bob's two, one mentions her", nil, "alice", 2, 1, 3, 5},
	}
	for _, st := range steps {
		if st.send != nil {
			st.send()
		}
		c := entry(t, e, st.user, ab)
		if c.UnreadCount != st.unread || c.UnreadMentionCount != st.mentions || c.HasUnreadMention != (st.mentions > 0) ||
			c.ReadSeq != st.readSeq || c.LatestMsg == nil || c.LatestMsg.Seq != st.latestSeq || c.MaxSeq != st.latestSeq {
			t.Fatalf("%s: %+v", st.name, c)
		}
	}
	last := int64(5)
	c := entry(t, e, "alice", ab)
	if c.ConversationType != 1 || c.PeerUserID != "bob" || c.GroupID != "" || c.UpdatedAt != c.LatestMsg.SendAt || c.LatestMsg.Content == nil {
		t.Fatalf("single entry: %+v", c)
	}
	if err := e.ack("alice", ab, "read", 4); err != nil {
		t.Fatal(err)
	}
	if c := entry(t, e, "alice", ab); c.UnreadCount != 1 || c.UnreadMentionCount != 1 {
		t.Fatalf("alice after reading 4: %+v", c)
	}
	if err := e.ack("alice", ab, "read", last); err != nil {
		t.Fatal(err)
	}
	if c := entry(t, e, "alice", ab); c.UnreadCount != 0 || c.HasUnreadMention {
		t.Fatalf("alice after reading all: %+v", c)
	}

	gid := e.createGroup("alice", "bob", "carol")
	gconv := domain.GroupConversationID(gid)
	if _, err := e.sendGroup("bob", gid, "carol"); err != nil {
		t.Fatal(err)
	}
	if _, err := e.sendGroup("alice", gid, "all"); err != nil {
		t.Fatal(err)
	}
	g3, err := e.sendGroup("carol", gid)
	if err != nil {
		t.Fatal(err)
	}
	c = entry(t, e, "carol", gconv)
	// carol's own message advanced her read cursor past everything.
	if c.UnreadCount != 0 || c.UnreadMentionCount != 0 || c.ConversationType != 3 || c.GroupID != gid || c.PeerUserID != "" {
		t.Fatalf("carol after sending: %+v", c)
	}
	c = entry(t, e, "bob", gconv)
	if c.UnreadCount != 2 || c.UnreadMentionCount != 1 || c.LatestMsg.Seq != g3 {
		t.Fatalf("bob in the group (creation notice not unread): %+v", c)
	}
	if _, err := e.recall.Revoke(bg, "alice", sync.RevokeRequest{ConversationID: gconv, Seq: g3 - 1}); err != nil {
		t.Fatal(err)
	}
	c = entry(t, e, "bob", gconv)
	if c.UnreadCount != 1 || c.UnreadMentionCount != 0 {
		t.Fatalf("bob after alice recalled her @all (the revoke notice is no unread): %+v", c)
	}
}

// TestConversationSettingsAndDelete: pinning orders the list, recv_msg_opt
// reaches the group fanout at once, and deleting hides a conversation for
// the caller only, until the next message.
func TestConversationSettingsAndDelete(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOpts{})
	e.addUsers("alice", "bob", "carol", "dave")
	ab := domain.SingleConversationID("alice", "bob")
	ac := domain.SingleConversationID("alice", "carol")
	e.send("alice", "bob")
	e.send("alice", "carol")
	gid := e.createGroup("alice", "bob", "carol")
	gconv := domain.GroupConversationID(gid)
	order := func(user string) []string {
		t.Helper()
		res, err := e.convs.List(bg, user, 0, 0)
		if err != nil {
			t.Fatal(err)
		}
		var ids []string
		for _, c := range res.Conversations {
			ids = append(ids, c.ConversationID)
		}
		if int(res.Total) != len(ids) {
			t.Fatalf("total %d for %d entries", res.Total, len(ids))
		}
		return ids
	}
	if got := order("alice"); fmt.Sprint(got) != fmt.Sprint([]string{gconv, ac, ab}) {
		t.Fatalf("alice's list by newest message: %v", got)
	}
	pin := true
	c, err := e.convs.Update(bg, "alice", sync.UpdateRequest{ConversationID: ab, IsPinned: &pin})
	if err != nil || !c.IsPinned || c.ConversationID != ab || c.PeerUserID != "bob" {
		t.Fatalf("pin = %+v, %v", c, err)
	}
	if got := order("alice"); fmt.Sprint(got) != fmt.Sprint([]string{ab, gconv, ac}) {
		t.Fatalf("alice's list with ab pinned: %v", got)
	}

	// recv_msg_opt 1 (no push): bob's devices get no push of group messages.
	opt := sync.RecvNoPush
	if c, err := e.convs.Update(bg, "bob", sync.UpdateRequest{ConversationID: gconv, RecvMsgOpt: &opt}); err != nil || c.RecvMsgOpt != 1 {
		t.Fatalf("recv_msg_opt = %+v, %v", c, err)
	}
	// The group's creation notice may still be on its way (it goes through
	// the pipeline too), so both checks look for this message's seq.
	e.reg.Reset()
	seq, _ := e.sendGroup("alice", gid)
	hasSeq := func(p []wstest.Push) bool {
		return slices.ContainsFunc(p, func(x wstest.Push) bool { return x.Int("seq") == seq })
	}
	e.reg.WaitFor(t, "carol", wire.PushMsg, "carol's push", hasSeq)
	if p := e.reg.PushesOf("bob", wire.PushMsg); hasSeq(p) {
		t.Fatalf("bob (no push) got %+v", p)
	}

	for _, tc := range []struct {
		name   string
		user   string
		req    sync.UpdateRequest
		reason wire.Reason
	}{
		{"nothing to change", "alice", sync.UpdateRequest{ConversationID: ab}, wire.ReasonBadRequest},
		{"bad recv_msg_opt", "alice", sync.UpdateRequest{ConversationID: ab, RecvMsgOpt: new(int(3))}, wire.ReasonBadRequest},
		{"not a party", "dave", sync.UpdateRequest{ConversationID: ab, IsPinned: &pin}, wire.ReasonNotConversationMember},
		{"not a member", "dave", sync.UpdateRequest{ConversationID: gconv, IsPinned: &pin}, wire.ReasonNotConversationMember},
	} {
		_, err := e.convs.Update(bg, tc.user, tc.req)
		wantReason(t, err, tc.reason)
	}
	// A conversation without messages gets a row of its own.
	ad := domain.SingleConversationID("alice", "dave")
	if c, err := e.convs.Update(bg, "alice", sync.UpdateRequest{ConversationID: ad, IsPinned: &pin}); err != nil || c.MaxSeq != 0 || c.LatestMsg != nil {
		t.Fatalf("pin an empty conversation: %+v, %v", c, err)
	}

	// Delete: gone for alice, still there for bob, back on the next message
	// with only that one unread.
	if _, err := e.convs.Delete(bg, "alice", sync.DeleteRequest{ConversationID: ab}); err != nil {
		t.Fatal(err)
	}
	for _, id := range order("alice") {
		if id == ab {
			t.Fatalf("deleted conversation still listed: %v", order("alice"))
		}
	}
	if got := order("bob"); len(got) != 2 {
		t.Fatalf("bob's list: %v", got)
	}
	e.send("bob", "alice")
	c = entry(t, e, "alice", ab)
	if c.UnreadCount != 1 || !c.IsPinned {
		t.Fatalf("back after a new message: %+v", c)
	}
	_, err = e.convs.Delete(bg, "dave", sync.DeleteRequest{ConversationID: ab})
	wantReason(t, err, wire.ReasonNotConversationMember)
	_, err = e.convs.List(bg, "alice", -1, 0)
	wantReason(t, err, wire.ReasonBadRequest)
	if res, err := e.convs.List(bg, "alice", 0, 1000); err != nil || len(res.Conversations) != 4 {
		t.Fatalf("a large limit is clamped, not refused: %+v, %v", res, err)
	}
}

// TestPeersMustExist (issue 13 item 9): a single chat with an unregistered
// peer gets no settings row, no hidden row and no cursor: user_not_found,
// and the caller's list stays empty.
func TestPeersMustExist(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOpts{})
	e.addUsers("alice")
	ghost := domain.SingleConversationID("alice", "ghost")
	pin := true
	_, err := e.convs.Update(bg, "alice", sync.UpdateRequest{ConversationID: ghost, IsPinned: &pin})
	wantReason(t, err, wire.ReasonUserNotFound)
	_, err = e.convs.Delete(bg, "alice", sync.DeleteRequest{ConversationID: ghost})
	wantReason(t, err, wire.ReasonUserNotFound)
	_, err = e.access.Member(bg, "alice", ghost)
	wantReason(t, err, wire.ReasonUserNotFound)
	res, err := e.convs.List(bg, "alice", 0, 0)
	if err != nil || len(res.Conversations) != 0 {
		t.Fatalf("alice's list %+v %v: rows were made for a peer that does not exist", res, err)
	}
	// A note to self needs no peer.
	if _, err := e.access.Member(bg, "alice", domain.SingleConversationID("alice", "alice")); err != nil {
		t.Fatal(err)
	}
}
