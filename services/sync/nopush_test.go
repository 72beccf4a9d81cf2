package sync_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/nexo-im/nexo/configs"
	"github.com/nexo-im/nexo/domain"
	"github.com/nexo-im/nexo/gateway/wire"
	"github.com/nexo-im/nexo/gateway/ws/wstest"
	"github.com/nexo-im/nexo/services/sync"
)

// TestSingleChatRecvNoPush: recv_msg_opt 1 on a single chat stops the live
// pushes to its owner (the deliver stage in two-phase mode, the push queue
// of the synchronous path) from the next message on, while the sender's
// other connections still get it; setting it back restores them (issue 15
// item 1).
func TestSingleChatRecvNoPush(t *testing.T) {
	t.Parallel()
	for name, mode := range map[string]configs.TwoPhase{"two-phase": saveFirst, "deliver first": deliverFirst, "synchronous": syncMode} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, envOpts{mode: mode})
			e.addUsers("alice", "bob")
			ab := domain.SingleConversationID("alice", "bob")
			seqOf := func(seq int64) func([]wstest.Push) bool {
				return func(p []wstest.Push) bool {
					for _, x := range p {
						if x.Int("seq") == seq {
							return true
						}
					}
					return false
				}
			}
			// Bob gets pushes; this also loads his (empty) settings into the cache.
			s1 := e.send("alice", "bob")
			e.reg.WaitFor(t, "bob", wire.PushMsg, "bob's push before the setting", seqOf(s1))

			opt := sync.RecvNoPush
			if _, err := e.convs.Update(bg, "bob", sync.UpdateRequest{ConversationID: ab, RecvMsgOpt: &opt}); err != nil {
				t.Fatal(err)
			}
			s2 := e.send("alice", "bob")
			// Alice's own push of s2 leaves in the same call as bob's would.
			e.reg.WaitFor(t, "alice", wire.PushMsg, "alice's own push", seqOf(s2))
			if seqOf(s2)(e.reg.PushesOf("bob", wire.PushMsg)) {
				t.Fatalf("bob set recv_msg_opt 1 and still got seq %d pushed", s2)
			}

			normal := sync.RecvNormal
			if _, err := e.convs.Update(bg, "bob", sync.UpdateRequest{ConversationID: ab, RecvMsgOpt: &normal}); err != nil {
				t.Fatal(err)
			}
			s3 := e.send("alice", "bob")
			e.reg.WaitFor(t, "bob", wire.PushMsg, "bob's push after resetting", seqOf(s3))
		})
	}
}

type noPushStore struct {
	calls int
	ids   []string
	err   error
}

func (s *noPushStore) NoPushSingle(context.Context, string) ([]string, error) {
	s.calls++
	return s.ids, s.err
}

// TestNoPushCacheQueriesOncePerUser: the deliver stage's lookups cost one
// query per user per TTL, not one per message; a failing store pushes.
func TestNoPushCacheQueriesOncePerUser(t *testing.T) {
	st := &noPushStore{ids: []string{"si_a_b"}}
	c := sync.NewNoPushCache(st, time.Hour, quiet)
	for range 100 {
		if !c.NoPush(bg, "b", "si_a_b") || c.NoPush(bg, "b", "si_b_c") {
			t.Fatal("wrong answer")
		}
	}
	if st.calls != 1 {
		t.Fatalf("%d queries for 200 lookups of one user, want 1", st.calls)
	}
	c.Invalidate("b")
	c.NoPush(bg, "b", "si_a_b")
	if st.calls != 2 {
		t.Fatalf("invalidate did not reload: %d queries", st.calls)
	}
	failing := sync.NewNoPushCache(&noPushStore{err: errors.New("down")}, time.Hour, quiet)
	if failing.NoPush(bg, "b", "si_a_b") {
		t.Fatal("a store error must answer push (false)")
	}
}
