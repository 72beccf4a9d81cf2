package actions_test

import (
	"context"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/nexo-im/nexo/domain"
	"github.com/nexo-im/nexo/gateway/wire"
	"github.com/nexo-im/nexo/gateway/ws/wstest"
	"github.com/nexo-im/nexo/services/actions"
	"github.com/nexo-im/nexo/services/chat"
	"github.com/nexo-im/nexo/services/sync"
	"github.com/nexo-im/nexo/store/storetest"
)

// TestActionsOnRedisTopologies runs every action through the two-phase
// pipeline on each supported Redis deployment (standalone, Cluster,
// Sentinel): the notices are accepted, saved and delivered in seq order
// like any message, and the read-count lock works on each.
func TestActionsOnRedisTopologies(t *testing.T) {
	for name, open := range map[string]func(t testing.TB) (redis.UniversalClient, string){
		"redis":    func(t testing.TB) (redis.UniversalClient, string) { return storetest.Redis(t) },
		"cluster":  storetest.RedisCluster,
		"sentinel": storetest.RedisSentinel,
	} {
		t.Run(name, func(t *testing.T) {
			e := newEnv(t, envOpts{mode: saveFirst, redis: open})
			e.addUsers("alice", "bob", "carol")
			g := e.createGroup("alice", "bob", "carol")
			conv := domain.GroupConversationID(g)
			seq := e.sendGroup("bob", g, "hello")
			ack, err := e.sendReq("carol", chat.SendRequest{SessionType: 3, GroupID: g, Content: chat.ContentJSON{Text: "re"}, Quote: &chat.QuoteRequest{Seq: seq}})
			if err != nil {
				t.Fatal(err)
			}
			e.waitSaved(conv, ack.Seq)
			// alice reads before she acts: an action's notice, like any of
			// her messages, moves her own read cursor past it in the save.
			if _, err := e.cursors.Ack(bg, "alice", sync.AckSource{}, sync.AckRequest{AckType: "read", ConversationID: conv, Seq: seq}); err != nil {
				t.Fatal(err)
			}
			if err := e.writer.Flush(bg); err != nil {
				t.Fatal(err)
			}
			e.run(func(ctx context.Context) { _ = e.counts.Run(ctx) })
			if _, err := e.svc.Edit(bg, "bob", actions.EditRequest{ConversationID: conv, Seq: seq, Content: actions.EditContent{Text: "hello!"}}); err != nil {
				t.Fatal(err)
			}
			if _, err := e.svc.React(bg, "alice", actions.ReactionRequest{ConversationID: conv, Seq: seq, Emoji: "👍", Op: actions.OpAdd}); err != nil {
				t.Fatal(err)
			}
			if _, err := e.svc.Delete(bg, "carol", actions.DeleteRequest{ConversationID: conv, Seqs: []int64{ack.Seq}, Scope: actions.ScopeEveryone}); err != nil {
				t.Fatal(err)
			}
			// Every member's devices get the three notices, in the order
			// the actions were taken (their seqs).
			for _, u := range []string{"alice", "bob", "carol"} {
				e.reg.WaitNotices(t, u, actions.MsgDeleteNotification, 1)
				var kinds []int64
				for _, p := range e.reg.PushesOf(u, wire.PushMsg) {
					if mt := p.Int("msg_type"); mt >= 1601 && mt <= 1603 {
						kinds = append(kinds, mt)
					}
				}
				if len(kinds) != 3 || kinds[0] != 1601 || kinds[1] != 1602 || kinds[2] != 1603 {
					t.Fatalf("%s got notices %v, want 1601 1602 1603 once each", u, kinds)
				}
			}
			m := e.pullOne("carol", conv, seq)
			if m.Content.Text != "hello!" || m.EditVersion != 1 || len(m.Reactions) != 1 {
				t.Fatalf("pull %+v", m)
			}
			// alice read it; carol's own send moved her read cursor past it.
			e.reg.WaitPush(t, "bob", wire.PushReadCount, func(p wstest.Push) bool {
				c := p.Data["counts"].([]any)[0].(map[string]any)
				return c["read_count"].(float64) == 2 && c["member_count"].(float64) == 2
			})
		})
	}
}
