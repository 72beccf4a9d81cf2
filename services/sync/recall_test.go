package sync_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/nexo-im/nexo/configs"
	"github.com/nexo-im/nexo/domain"
	"github.com/nexo-im/nexo/gateway/wire"
	"github.com/nexo-im/nexo/gateway/ws/wstest"
	"github.com/nexo-im/nexo/services/chat"
	"github.com/nexo-im/nexo/services/group"
	"github.com/nexo-im/nexo/services/sync"
)

// stored reads the message at (conv, seq) as a pull serves it.
func (e *env) stored(user, conv string, seq int64) chat.MessageJSON {
	e.t.Helper()
	res, err := e.puller.PullBySeqs(bg, user, conv, []int64{seq})
	if err != nil || len(res.Messages) != 1 {
		e.t.Fatalf("pull %s seq %d: %+v, %v", conv, seq, res, err)
	}
	return res.Messages[0]
}

// notices returns the revoke notifications stored in conv.
func (e *env) notices(user, conv string) []sync.RevokeNotificationJSON {
	e.t.Helper()
	res, err := e.puller.Pull(bg, user, chat.PullRequest{ConversationID: conv, BeginSeq: 1})
	if err != nil {
		e.t.Fatal(err)
	}
	var out []sync.RevokeNotificationJSON
	for _, m := range res.Messages {
		if m.MsgType == int(sync.MsgRevokeNotification) {
			var n sync.RevokeNotificationJSON
			if err := json.Unmarshal(m.Content.Custom, &n); err != nil {
				e.t.Fatal(err)
			}
			out = append(out, n)
		}
	}
	return out
}

// TestRecallOfASavedMessage: the sender recalls within the window; the
// message is served revoked without content, the initiator gets a 2101
// revoked, both parties get one revoke notice ordered after the message,
// and recalling again changes nothing.
func TestRecallOfASavedMessage(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOpts{})
	e.addUsers("alice", "bob")
	conv := domain.SingleConversationID("alice", "bob")
	seq := e.send("alice", "bob")
	e.send("bob", "alice")
	e.reg.Reset()
	for i := 0; i < 2; i++ {
		res, err := e.recall.Revoke(bg, "alice", sync.RevokeRequest{ConversationID: conv, Seq: seq})
		if err != nil || res.AckType != "revoked" || res.Seq != seq || res.ConversationID != conv || res.UserID != "alice" || res.ServerMsgID == "" {
			t.Fatalf("revoke #%d = %+v, %v", i+1, res, err)
		}
	}
	if m := e.stored("bob", conv, seq); m.Status != "revoked" || m.Content != nil || m.SenderID != "alice" {
		t.Fatalf("pulled %+v", m)
	}
	acks := e.reg.PushesOf("alice", wire.PushAck)
	if len(acks) != 2 || acks[0].Str("ack_type") != "revoked" || acks[0].Int("seq") != seq {
		t.Fatalf("initiator's 2101s: %+v", acks)
	}
	n := e.notices("bob", conv)
	if len(n) != 1 || n[0].Seq != seq || n[0].RevokerID != "alice" || n[0].SenderID != "alice" {
		t.Fatalf("revoke notices %+v", n)
	}
	for _, u := range []string{"alice", "bob"} {
		got := e.reg.WaitFor(t, u, wire.PushMsg, "the revoke notice", func(p []wstest.Push) bool {
			for _, x := range p {
				if x.Int("msg_type") == 1600 && x.Int("seq") == 3 {
					return true
				}
			}
			return false
		})
		notices := 0
		for _, x := range got {
			if x.Int("msg_type") == 1600 {
				notices++
			}
		}
		if notices != 1 {
			t.Fatalf("%s got %d revoke notices", u, notices)
		}
	}
}

// TestRecallRefusals: who may not recall what, and why.
func TestRecallRefusals(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOpts{})
	e.addUsers("alice", "bob", "carol", "dave")
	ab := domain.SingleConversationID("alice", "bob")
	mine := e.send("alice", "bob")
	// An old message: sent three minutes ago.
	old := chatMessage(ab, mine+1, "alice", "bob", time.Now().Add(-3*time.Minute))
	if _, err := e.msgs.SaveBatch(bg, []domain.Message{old}); err != nil {
		t.Fatal(err)
	}
	failed := chatMessage(ab, mine+2, "alice", "bob", time.Now())
	if err := e.msgs.SaveFailed(bg, failed); err != nil {
		t.Fatal(err)
	}
	gid := e.createGroup("alice", "bob", "carol")
	gconv := domain.GroupConversationID(gid)
	bobs, _ := e.sendGroup("bob", gid)
	if _, err := e.groups.Kick(bg, "alice", group.UsersRequest{GroupID: gid, UserIDs: []string{"carol"}}); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name   string
		user   string
		conv   string
		seq    int64
		reason wire.Reason
	}{
		{"not the sender", "bob", ab, mine, wire.ReasonRevokeNotAllowed},
		{"outside the window", "alice", ab, mine + 1, wire.ReasonRevokeTimeout},
		{"a failed save", "alice", ab, mine + 2, wire.ReasonMessageNotFound},
		{"never issued", "alice", ab, 99, wire.ReasonMessageNotFound},
		{"not a party", "carol", ab, mine, wire.ReasonNotConversationMember},
		{"a notification", "alice", gconv, 1, wire.ReasonRevokeNotAllowed},
		{"a member, another's message", "bob", gconv, 1, wire.ReasonRevokeNotAllowed},
		{"kicked", "carol", gconv, bobs, wire.ReasonMemberNotActive},
		{"never a member", "dave", gconv, bobs, wire.ReasonNotConversationMember},
		{"seq 0", "alice", ab, 0, wire.ReasonBadRequest},
	}
	for _, tc := range cases {
		_, err := e.recall.Revoke(bg, tc.user, sync.RevokeRequest{ConversationID: tc.conv, Seq: tc.seq})
		if err == nil {
			t.Fatalf("%s: allowed", tc.name)
		}
		wantReason(t, err, tc.reason)
	}
	if m := e.stored("bob", ab, mine); m.Status != "normal" {
		t.Fatalf("a refused recall changed the message: %+v", m)
	}
	// The owner recalls a member's message, at any age.
	if _, err := e.recall.Revoke(bg, "alice", sync.RevokeRequest{ConversationID: gconv, Seq: bobs}); err != nil {
		t.Fatalf("owner recall: %v", err)
	}
	if m := e.stored("bob", gconv, bobs); m.Status != "revoked" {
		t.Fatalf("owner recall left %+v", m)
	}
	// An admin may too.
	if _, err := e.groups.SetRole(bg, "alice", group.SetRoleRequest{GroupID: gid, UserID: "bob", RoleLevel: int(domain.RoleAdmin)}); err != nil {
		t.Fatal(err)
	}
	alices, _ := e.sendGroup("alice", gid)
	if _, err := e.recall.Revoke(bg, "bob", sync.RevokeRequest{ConversationID: gconv, Seq: alices}); err != nil {
		t.Fatalf("admin recall of the owner's message: %v", err)
	}
}

func chatMessage(conv string, seq int64, sender, recv string, at time.Time) domain.Message {
	return domain.Message{ServerMsgID: conv + "-old-" + time.Now().Format("150405.000000000"), ClientMsgID: "old" + at.Format("150405.000000000"),
		ConversationID: conv, Seq: seq, SenderID: sender, RecvID: recv, SessionType: domain.SessionSingle,
		MsgType: domain.MsgText, Content: domain.Content{Text: "old"}, Status: domain.StatusNormal, SendAt: at.UnixMilli()}
}

// TestRecallBeforeSave: a recall of an accepted message that is not saved
// yet is recorded; when the save is late it answers server_busy, and the
// message is still stored revoked when it arrives; a recall that waits
// for the save answers the outcome; a non-sender's recorded recall never
// applies.
func TestRecallBeforeSave(t *testing.T) {
	t.Parallel()
	t.Run("save later than revoke_wait", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, envOpts{mode: saveFirst, noStages: true, tweak: func(c *configs.Config) { c.Sync.RevokeWait = 50 * time.Millisecond }})
		e.addUsers("alice", "bob")
		conv := domain.SingleConversationID("alice", "bob")
		seq := e.send("alice", "bob")
		notMine := e.send("alice", "bob")
		_, err := e.recall.Revoke(bg, "alice", sync.RevokeRequest{ConversationID: conv, Seq: seq})
		wantReason(t, err, wire.ReasonServerBusy)
		_, err = e.recall.Revoke(bg, "bob", sync.RevokeRequest{ConversationID: conv, Seq: notMine})
		wantReason(t, err, wire.ReasonServerBusy)
		e.startStages()
		e.waitSaved(conv, notMine)
		if m := e.stored("bob", conv, seq); m.Status != "revoked" || m.Content != nil {
			t.Fatalf("recorded recall not applied at save: %+v", m)
		}
		if m := e.stored("bob", conv, notMine); m.Status != "normal" {
			t.Fatalf("bob's recorded recall of alice's message applied: %+v", m)
		}
		// The retry confirms it and announces it.
		if _, err := e.recall.Revoke(bg, "alice", sync.RevokeRequest{ConversationID: conv, Seq: seq}); err != nil {
			t.Fatal(err)
		}
		e.waitSaved(conv, notMine+1)
		if n := e.notices("bob", conv); len(n) != 1 || n[0].Seq != seq {
			t.Fatalf("notices %+v", n)
		}
	})
	t.Run("save within revoke_wait", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, envOpts{mode: saveFirst, noStages: true, tweak: func(c *configs.Config) { c.Sync.RevokeWait = 10 * time.Second }})
		e.addUsers("alice", "bob")
		conv := domain.SingleConversationID("alice", "bob")
		seq := e.send("alice", "bob")
		done := make(chan error, 1)
		go func() {
			_, err := e.recall.Revoke(bg, "alice", sync.RevokeRequest{ConversationID: conv, Seq: seq})
			done <- err
		}()
		// Start saving once the recall is recorded.
		deadline := time.Now().Add(10 * time.Second)
		for {
			var n int64
			if err := e.db.Gorm.Raw("SELECT COUNT(*) FROM message_revokes").Scan(&n).Error; err != nil {
				t.Fatal(err)
			}
			if n == 1 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatal("recall never recorded")
			}
			time.Sleep(5 * time.Millisecond) // polling the database with a deadline
		}
		e.startStages()
		if err := <-done; err != nil {
			t.Fatalf("recall waiting for the save: %v", err)
		}
		if m := e.stored("bob", conv, seq); m.Status != "revoked" {
			t.Fatalf("after the save: %+v", m)
		}
	})
}

// TestGapsArePlaceholders: seqs that never hold a message (a skipped
// allocator block) are pulled as placeholders, and a client may ACK past
// them to keep its contiguous prefix.
func TestGapsArePlaceholders(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOpts{})
	e.addUsers("alice", "bob")
	conv := domain.SingleConversationID("alice", "bob")
	e.send("alice", "bob")
	e.send("alice", "bob")
	if err := e.accepter.Retire(bg, conv, 5); err != nil {
		t.Fatal(err)
	}
	last := e.send("alice", "bob")
	if last != 6 {
		t.Fatalf("seq after the gap = %d", last)
	}
	res, err := e.puller.Pull(bg, "bob", chat.PullRequest{ConversationID: conv, BeginSeq: 1})
	if err != nil || len(res.Messages) != 6 {
		t.Fatalf("pull = %+v, %v", res, err)
	}
	for i, m := range res.Messages {
		want := "normal"
		if i >= 2 && i <= 4 {
			want = "unavailable"
		}
		if m.Seq != int64(i+1) || m.Status != want {
			t.Fatalf("entry %d = %+v", i, m)
		}
	}
	if err := e.ack("bob", conv, "read", 5); err != nil {
		t.Fatalf("ACK of a gap seq: %v", err)
	}
}
