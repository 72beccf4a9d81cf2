package sync_test

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/nexo-im/nexo/configs"
	"github.com/nexo-im/nexo/domain"
	"github.com/nexo-im/nexo/gateway/wire"
	"github.com/nexo-im/nexo/gateway/ws/wstest"
	"github.com/nexo-im/nexo/services/sync"
)

// seqsOf returns the (conversation, seq) of the 2001 frames, in order, and
// the 2102 summaries by conversation.
func seqsOf(frames []wstest.Push) (msgs map[string][]int64, order []string, summaries map[string]int64) {
	msgs, summaries = map[string][]int64{}, map[string]int64{}
	for _, f := range frames {
		switch f.Code {
		case wire.PushMsg:
			conv := f.Str("conversation_id")
			if len(msgs[conv]) == 0 {
				order = append(order, conv)
			}
			msgs[conv] = append(msgs[conv], f.Int("seq"))
		case wire.PushGroupNotify:
			summaries[f.Str("conversation_id")] = f.Int("max_seq")
		}
	}
	return msgs, order, summaries
}

func ascending(from, to int64) []int64 {
	var out []int64
	for s := from; s <= to; s++ {
		out = append(out, s)
	}
	return out
}

// TestResendAfterDisconnect: bob acknowledged up to 3 and went away;
// resend returns exactly what he misses — his own messages and the
// acknowledged ones excluded — in ascending seq order, newest conversation
// first, with revoked messages without content; nothing when he is up to
// date.
func TestResendAfterDisconnect(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOpts{})
	e.addUsers("alice", "bob", "carol")
	ab := domain.SingleConversationID("alice", "bob")
	bc := domain.SingleConversationID("bob", "carol")
	for i := 0; i < 3; i++ {
		e.send("alice", "bob")
	}
	if err := e.ack("bob", ab, "delivered", 3); err != nil {
		t.Fatal(err)
	}
	e.flush()
	// Offline now.
	for i := 0; i < 4; i++ {
		e.send("alice", "bob")
	}
	e.send("carol", "bob")
	e.send("bob", "carol") // his own reply
	last := e.send("alice", "bob")
	if _, err := e.recall.Revoke(bg, "alice", sync.RevokeRequest{ConversationID: ab, Seq: 5}); err != nil {
		t.Fatal(err)
	}
	conn := &target{user: "bob", platform: 5}
	res, err := e.resender.Resend(bg, conn)
	if err != nil {
		t.Fatal(err)
	}
	frames := conn.got()
	msgs, order, summaries := seqsOf(frames)
	// ab: 4..7, then the recall notice (8) and the last message (9)
	// bc: bob answered carol, which delivered (and read) her message to him.
	if !slices.Equal(msgs[ab], ascending(4, last+1)) || len(msgs[bc]) != 0 || len(summaries) != 0 {
		t.Fatalf("resent %v, summaries %v", msgs, summaries)
	}
	if len(order) != 1 || res.Messages != len(frames) || res.Summaries != 0 {
		t.Fatalf("order %v, result %+v", order, res)
	}
	for _, f := range frames {
		if f.Str("conversation_id") == ab && f.Int("seq") == 5 && (f.Str("status") != "revoked" || f.Data["content"] != nil) {
			t.Fatalf("revoked message resent as %v", f.Data)
		}
	}
	// Once he acknowledges, nothing is left.
	if err := e.ack("bob", ab, "delivered", last+1); err != nil {
		t.Fatal(err)
	}
	again := &target{user: "bob", platform: 5}
	if res, err := e.resender.Resend(bg, again); err != nil || res.Messages != 0 || len(again.got()) != 0 {
		t.Fatalf("resend after ACKs (not flushed yet: overlaid) = %+v, %v", res, err)
	}
}

// TestResendCapsAndSummaries: at most resend_single_max single-chat and
// resend_group_max group messages in all, the newest conversations first;
// every conversation not sent in full (or with recv_msg_opt 1) gets a 2102
// {conversation_id, max_seq}; the client pulls the rest.
func TestResendCapsAndSummaries(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOpts{tweak: func(c *configs.Config) { c.Sync.ResendSingleMax, c.Sync.ResendGroupMax = 5, 3 }})
	e.addUsers("alice", "bob", "carol", "dave")
	ab := domain.SingleConversationID("alice", "bob")
	cb := domain.SingleConversationID("bob", "carol")
	db := domain.SingleConversationID("bob", "dave")
	for i := 0; i < 3; i++ {
		e.send("alice", "bob")
	}
	for i := 0; i < 4; i++ {
		e.send("carol", "bob")
	}
	gid := e.createGroup("alice", "bob", "carol")
	gconv := domain.GroupConversationID(gid)
	var gmax int64
	for i := 0; i < 5; i++ {
		gmax, _ = e.sendGroup("alice", gid)
	}
	e.send("dave", "bob")
	opt := sync.RecvNoPush
	if _, err := e.convs.Update(bg, "bob", sync.UpdateRequest{ConversationID: db, RecvMsgOpt: &opt}); err != nil {
		t.Fatal(err)
	}
	conn := &target{user: "bob", platform: 1}
	res, err := e.resender.Resend(bg, conn)
	if err != nil {
		t.Fatal(err)
	}
	msgs, order, summaries := seqsOf(conn.got())
	// Newest first: db (opt 1: summary only), group (cap 3 of 6), cb (4 of
	// 4), ab (the single cap's last 1 of 3).
	if !slices.Equal(msgs[gconv], ascending(1, 3)) || !slices.Equal(msgs[cb], ascending(1, 4)) || !slices.Equal(msgs[ab], []int64{1}) || len(msgs[db]) != 0 {
		t.Fatalf("resent %v (order %v)", msgs, order)
	}
	if len(summaries) != 3 || summaries[gconv] != gmax || summaries[ab] != 3 || summaries[db] != 1 {
		t.Fatalf("summaries %v", summaries)
	}
	if res.Messages != 8 || res.Summaries != 3 {
		t.Fatalf("result %+v", res)
	}
	// Summaries come after every message.
	frames := conn.got()
	if frames[len(frames)-1].Code != wire.PushGroupNotify || frames[len(frames)-4].Code != wire.PushMsg {
		t.Fatalf("frame order: %v", frames)
	}
}

// TestResendLockSuppressesStorms: a second connect of the same user and
// platform within resend_lock_ttl resends nothing; another platform does.
func TestResendLockSuppressesStorms(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOpts{tweak: func(c *configs.Config) { c.Sync.ResendLockTTL = time.Minute }})
	e.addUsers("alice", "bob")
	e.send("alice", "bob")
	first, err := e.resender.Resend(bg, &target{user: "bob", platform: 5})
	if err != nil || first.Locked || first.Messages != 1 {
		t.Fatalf("first resend %+v, %v", first, err)
	}
	again, err := e.resender.Resend(bg, &target{user: "bob", platform: 5})
	if err != nil || !again.Locked || again.Messages != 0 {
		t.Fatalf("second resend %+v, %v", again, err)
	}
	other, err := e.resender.Resend(bg, &target{user: "bob", platform: 2})
	if err != nil || other.Locked || other.Messages != 1 {
		t.Fatalf("other platform %+v, %v", other, err)
	}
}

// TestResendPacing: a connection that reports its queue never has more
// than MaxQueued frames waiting from the resend, which still sends all;
// one that does not is sent at most MaxQueued frames.
func TestResendPacing(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOpts{tweak: func(c *configs.Config) { c.WS.HighWater = 16 }}) // MaxQueued 8
	e.addUsers("alice", "bob")
	for i := 0; i < 20; i++ {
		e.send("alice", "bob")
	}
	paced := &pacedTarget{target: target{user: "bob", platform: 5}}
	done := make(chan error, 1)
	go func() {
		_, err := e.resender.Resend(bg, paced)
		done <- err
	}()
	// Drain like a connection's writer until the resend returns.
	for finished := false; !finished; {
		if paced.queued.Load() > 0 {
			paced.queued.Add(-1)
			continue
		}
		select {
		case err := <-done:
			if err != nil {
				t.Fatal(err)
			}
			finished = true
		case <-time.After(time.Millisecond): // the writer idles; not synchronisation of the result
		}
	}
	if n := len(paced.got()); n != 20 {
		t.Fatalf("paced resend sent %d of 20", n)
	}
	if h := paced.highest.Load(); h > 8 {
		t.Fatalf("%d frames queued at once, limit 8", h)
	}
	plain := &target{user: "bob", platform: 6}
	res, err := e.resender.Resend(bg, plain)
	if err != nil || res.Messages+res.Summaries > 8 || res.Messages == 0 {
		t.Fatalf("unpaced resend %+v, %v", res, err)
	}
}

// timedTarget reports when it was registered.
type timedTarget struct {
	target
	at time.Time
}

func (c *timedTarget) ConnectedAt() time.Time { return c.at }

// TestResendSkipsWhatLivePushesCover: messages sent after the connection
// registered are left to the live push.
func TestResendSkipsWhatLivePushesCover(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOpts{})
	e.addUsers("alice", "bob")
	conv := domain.SingleConversationID("alice", "bob")
	now := time.Now()
	var batch []domain.Message
	for i, at := range []time.Time{now.Add(-2 * time.Second), now.Add(-time.Second), now} {
		batch = append(batch, chatMessage(conv, int64(i+1), "alice", "bob", at))
		batch[i].ServerMsgID += fmt.Sprint(i)
		batch[i].ClientMsgID += fmt.Sprint(i)
	}
	if _, err := e.msgs.SaveBatch(bg, batch); err != nil {
		t.Fatal(err)
	}
	conn := &timedTarget{target: target{user: "bob", platform: 5}, at: now.Add(-500 * time.Millisecond)}
	if _, err := e.resender.Resend(bg, conn); err != nil {
		t.Fatal(err)
	}
	msgs, _, summaries := seqsOf(conn.got())
	if !slices.Equal(msgs[conv], []int64{1, 2}) || len(summaries) != 0 {
		t.Fatalf("resent %v, summaries %v", msgs, summaries)
	}
}
