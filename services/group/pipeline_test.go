package group_test

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nexo-im/nexo/domain"
	"github.com/nexo-im/nexo/gateway/wire"
	"github.com/nexo-im/nexo/gateway/ws/wstest"
	"github.com/nexo-im/nexo/services/chat"
	"github.com/nexo-im/nexo/services/group"
)

// TestJoinDuringAStreamOfSends: while members keep sending, dave joins.
// By pull he sees exactly the messages with seq >= his join_seq (his join
// notification first); by push he never gets one below it, never one
// twice, and gets every message sent after his join returned.
func TestJoinDuringAStreamOfSends(t *testing.T) {
	for _, pm := range pipelineModes {
		t.Run(pm.name, func(t *testing.T) {
			t.Parallel()
			s := newStack(t, pm.mode)
			s.addUsers("alice", "bob", "carol", "dave")
			g, err := s.svc.Create(bg, "alice", group.CreateRequest{Name: "stream", MemberIDs: []string{"bob", "carol"}, JoinPolicy: group.PolicyOpen})
			if err != nil {
				t.Fatal(err)
			}
			gid := g.GroupID
			s.reg.Connect("dave")
			s.reg.Connect("alice")

			var mu sync.Mutex
			acked := map[int64]string{}
			stop := make(chan struct{})
			var wg sync.WaitGroup
			started := make(chan struct{}, 2)
			for _, sender := range []string{"bob", "carol"} {
				wg.Go(func() {
					for i := 0; ; i++ {
						select {
						case <-stop:
							return
						default:
						}
						a, err := s.send(sender, gid, "")
						if err != nil {
							t.Errorf("%s send: %v", sender, err)
							return
						}
						mu.Lock()
						acked[a.Seq] = sender
						mu.Unlock()
						if i == 20 {
							started <- struct{}{}
						}
					}
				})
			}
			<-started
			<-started // both senders are well into their stream
			joined, err := s.svc.Join(bg, "dave", gid)
			if err != nil {
				t.Fatal(err)
			}
			// Keep the stream going a little after the join.
			for i := 0; i < 20; i++ {
				a, err := s.send("alice", gid, "")
				if err != nil {
					t.Fatal(err)
				}
				mu.Lock()
				acked[a.Seq] = "alice"
				mu.Unlock()
			}
			close(stop)
			wg.Wait()
			// Messages sent after the join returned, with nobody else sending.
			var after []int64
			for i := 0; i < 5; i++ {
				a, err := s.send("bob", gid, "")
				if err != nil {
					t.Fatal(err)
				}
				acked[a.Seq] = "bob"
				after = append(after, a.Seq)
			}
			last := after[len(after)-1]
			s.waitSaved(t, gid, last)

			var before, since int
			for seq := range acked {
				if seq < joined.JoinSeq {
					before++
				} else {
					since++
				}
			}
			if before < 40 || since < 25 {
				t.Fatalf("the join did not land inside the stream: %d messages before, %d after", before, since)
			}

			msgs, minSeq, maxSeq := s.pullAll(t, "dave", gid)
			if minSeq != joined.JoinSeq || maxSeq != last {
				t.Fatalf("dave's bounds [%d, %d], want [%d, %d]", minSeq, maxSeq, joined.JoinSeq, last)
			}
			seen := map[int64]bool{}
			for _, m := range msgs {
				if m.Seq < joined.JoinSeq {
					t.Fatalf("dave pulled seq %d below his join_seq %d", m.Seq, joined.JoinSeq)
				}
				seen[m.Seq] = m.Status == string(domain.StatusNormal)
			}
			if msgs[0].Seq != joined.JoinSeq || msgs[0].MsgType != int(group.NotifyMemberJoined) {
				t.Fatalf("dave's first visible message %+v, want his join notification at %d", msgs[0], joined.JoinSeq)
			}
			for seq := range acked {
				if seq >= joined.JoinSeq && !seen[seq] {
					t.Fatalf("dave cannot pull seq %d (>= join_seq %d)", seq, joined.JoinSeq)
				}
			}
			// Pulling an older seq by number gives a placeholder, not the message.
			res, err := s.puller.PullBySeqs(bg, "dave", domain.GroupConversationID(gid), []int64{joined.JoinSeq - 1})
			if err != nil || len(res.Messages) != 1 || res.Messages[0].Status != string(domain.StatusUnavailable) {
				t.Fatalf("pull of a seq before the join: %+v %v", res, err)
			}

			s.reg.WaitFor(t, "dave", wire.PushMsg, "pushes of the messages sent after the join", func(got []wstest.Push) bool {
				n := 0
				for _, f := range got {
					if f.Seq() >= after[0] {
						n++
					}
				}
				return n >= len(after)
			})
			pushed := pushedSeqs(t, s.reg, "dave")
			for seq := range pushed {
				if seq < joined.JoinSeq {
					t.Fatalf("dave was pushed seq %d below his join_seq %d", seq, joined.JoinSeq)
				}
			}
			for _, seq := range after {
				if !pushed[seq] {
					t.Fatalf("dave was not pushed seq %d sent after his join", seq)
				}
			}
			if !pushed[joined.JoinSeq] {
				t.Fatalf("dave was not pushed his own join notification %d", joined.JoinSeq)
			}
		})
	}
}

// TestKickDuringAStreamOfSends: carol keeps sending while she is kicked.
// Every send she starts after the kick returned is refused and allocates
// nothing; by pull and by push she sees nothing after her kick
// notification; her newest seq is her cap.
func TestKickDuringAStreamOfSends(t *testing.T) {
	for _, pm := range pipelineModes {
		t.Run(pm.name, func(t *testing.T) {
			t.Parallel()
			s := newStack(t, pm.mode)
			s.addUsers("alice", "bob", "carol")
			g, err := s.svc.Create(bg, "alice", group.CreateRequest{Name: "stream", MemberIDs: []string{"bob", "carol"}, JoinPolicy: group.PolicyOpen})
			if err != nil {
				t.Fatal(err)
			}
			gid := g.GroupID
			s.reg.Connect("carol", "carol/phone", "carol/desktop")
			s.reg.Connect("alice")

			var kicked atomic.Bool
			var lateAccepted atomic.Int64
			refused := make(chan struct{})
			progress := make(chan struct{}, 1)
			var wg sync.WaitGroup
			wg.Go(func() { // carol
				for i := 0; ; i++ {
					after := kicked.Load()
					_, err := s.send("carol", gid, "carol/phone")
					if err != nil {
						if wire.FromError(err).Reason != wire.ReasonMemberNotActive {
							t.Errorf("carol's refusal: %v", err)
						}
						close(refused)
						return
					}
					if after {
						lateAccepted.Add(1)
					}
					if i == 20 {
						progress <- struct{}{}
					}
				}
			})
			stopBob := make(chan struct{})
			wg.Go(func() { // bob keeps the conversation busy
				for {
					select {
					case <-stopBob:
						return
					default:
					}
					if _, err := s.send("bob", gid, ""); err != nil {
						t.Errorf("bob: %v", err)
						return
					}
				}
			})
			<-progress
			res, err := s.svc.Kick(bg, "alice", group.UsersRequest{GroupID: gid, UserIDs: []string{"carol"}})
			if err != nil || len(res.Kicked) != 1 {
				t.Fatalf("kick: %+v %v", res, err)
			}
			kicked.Store(true)
			<-refused
			close(stopBob)
			wg.Wait()
			if n := lateAccepted.Load(); n != 0 {
				t.Fatalf("%d sends carol started after her kick returned were accepted", n)
			}
			capSeq := s.cursor(gid, "carol").MaxSeq

			// Her next send is refused and allocates nothing.
			a1, err := s.send("alice", gid, "")
			if err != nil {
				t.Fatal(err)
			}
			_, err = s.send("carol", gid, "carol/phone")
			wantReason(t, err, wire.ReasonMemberNotActive)
			a2, err := s.send("alice", gid, "")
			if err != nil || a2.Seq != a1.Seq+1 {
				t.Fatalf("a refused send moved the allocator: %d then %d (%v)", a1.Seq, a2.Seq, err)
			}
			s.waitSaved(t, gid, a2.Seq)

			msgs, _, maxSeq := s.pullAll(t, "carol", gid)
			if maxSeq != capSeq || capSeq >= a2.Seq {
				t.Fatalf("carol's newest seq %d, cap %d, conversation at %d", maxSeq, capSeq, a2.Seq)
			}
			lastMsg := msgs[len(msgs)-1]
			if lastMsg.Seq != capSeq || lastMsg.MsgType != int(group.NotifyMemberKicked) {
				t.Fatalf("carol's last visible message %+v, want her kick notification at %d", lastMsg, capSeq)
			}
			for _, m := range msgs {
				if m.Seq > capSeq {
					t.Fatalf("carol pulled seq %d after her cap %d", m.Seq, capSeq)
				}
			}
			if lo, hi, err := s.puller.Bounds(bg, "carol", domain.GroupConversationID(gid)); err != nil || hi != capSeq || lo != 1 {
				t.Fatalf("carol's newest seq: [%d, %d] %v", lo, hi, err)
			}
			// The save stage settles a2's in-flight mark in Redis just after
			// the database commit waitSaved saw; until then a pull reports
			// the seq as pending, which is no leak either.
			var byseq chat.PullResult
			// Polling with a deadline, not synchronising.
			for deadline := time.Now().Add(15 * time.Second); ; time.Sleep(10 * time.Millisecond) {
				byseq, err = s.puller.PullBySeqs(bg, "carol", domain.GroupConversationID(gid), []int64{a2.Seq})
				if err != nil || len(byseq.PendingSeqs) == 0 || time.Now().After(deadline) {
					break
				}
			}
			if err != nil || len(byseq.Messages) != 1 || byseq.Messages[0].Status != string(domain.StatusUnavailable) {
				t.Fatalf("carol pulled seq %d by number: %+v %v", a2.Seq, byseq, err)
			}

			// Pushes: wait until alice has everything, then carol has nothing past her cap.
			s.reg.WaitPush(t, "alice", wire.PushMsg, func(f wstest.Push) bool { return f.Seq() == a2.Seq })
			pushed := pushedSeqs(t, s.reg, "carol")
			for seq := range pushed {
				if seq > capSeq {
					t.Fatalf("carol was pushed seq %d after her cap %d", seq, capSeq)
				}
			}
			if !pushed[capSeq] {
				t.Fatalf("carol was not pushed her kick notification %d", capSeq)
			}
			for _, f := range s.reg.Pushes("carol") {
				if f.Code == wire.PushMsg && f.Conn == "carol/phone" && f.Str("sender_id") == "carol" && f.Int("msg_type") == int64(domain.MsgText) {
					// Her own messages go to her other connection only.
					t.Fatalf("carol's sending connection got a push of its own message: %+v", f)
				}
			}
		})
	}
}

// TestOutsidersCannotSendPullOrGetNewestSeq covers a non-member and a
// kicked member at the message service, through the real pipeline.
func TestOutsidersCannotSendPullOrGetNewestSeq(t *testing.T) {
	t.Parallel()
	s := newStack(t, pipelineModes[0].mode)
	s.addUsers("alice", "bob", "carol", "outsider")
	g, err := s.svc.Create(bg, "alice", group.CreateRequest{Name: "x", MemberIDs: []string{"bob", "carol"}})
	if err != nil {
		t.Fatal(err)
	}
	gid, conv := g.GroupID, domain.GroupConversationID(g.GroupID)
	a1 := must(s.send("alice", gid, ""))(t)

	_, err = s.send("outsider", gid, "")
	wantReason(t, err, wire.ReasonNotGroupMember)
	_, err = s.send("alice", "no-such-group", "")
	wantReason(t, err, wire.ReasonGroupNotFound)
	_, err = s.puller.Pull(bg, "outsider", chat.PullRequest{ConversationID: conv})
	wantReason(t, err, wire.ReasonNotConversationMember)
	_, _, err = s.puller.Bounds(bg, "outsider", conv)
	wantReason(t, err, wire.ReasonNotConversationMember)
	_, err = s.puller.PullBySeqs(bg, "outsider", conv, []int64{1})
	wantReason(t, err, wire.ReasonNotConversationMember)

	must(s.svc.Kick(bg, "alice", group.UsersRequest{GroupID: gid, UserIDs: []string{"carol"}}))(t)
	_, err = s.send("carol", gid, "")
	wantReason(t, err, wire.ReasonMemberNotActive)
	a2 := must(s.send("alice", gid, ""))(t)
	// Two refused sends and the kick notification between a1 and a2: the
	// refusals allocated nothing.
	if a2.Seq != a1.Seq+2 {
		t.Fatalf("seqs %d then %d: a refused send allocated", a1.Seq, a2.Seq)
	}
	s.waitSaved(t, gid, a2.Seq)
	res, err := s.puller.Pull(bg, "carol", chat.PullRequest{ConversationID: conv})
	if err != nil || res.MaxSeq != a2.Seq-1 {
		t.Fatalf("kicked carol's newest seq %d (%v), want her cap %d", res.MaxSeq, err, a2.Seq-1)
	}
	must(s.svc.Dismiss(bg, "alice", gid))(t)
	_, err = s.send("bob", gid, "")
	wantReason(t, err, wire.ReasonGroupDismissed)
}
