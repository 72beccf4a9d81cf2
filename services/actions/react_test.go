package actions_test

import (
	"fmt"
	"strings"
	gosync "sync"
	"testing"

	"github.com/nexo-im/nexo/configs"
	"github.com/nexo-im/nexo/domain"
	"github.com/nexo-im/nexo/gateway/wire"
	"github.com/nexo-im/nexo/services/actions"
)

func TestReactionRules(t *testing.T) {
	e := newEnv(t, envOpts{})
	e.addUsers("alice", "bob")
	conv := domain.SingleConversationID("alice", "bob")
	seq := e.send("alice", "bob", "hi")
	react := func(user, emoji, op string) (actions.ReactionResult, error) {
		return e.svc.React(bg, user, actions.ReactionRequest{ConversationID: conv, Seq: seq, Emoji: emoji, Op: op})
	}
	// Hostile emojis: 10 KiB, two characters, text, empty, a lone skin tone.
	for _, bad := range []string{strings.Repeat("👍", 2560), "👍👍", "ab", "a", "", "\U0001F3FB", "1\u0301"} {
		_, err := react("bob", bad, actions.OpAdd)
		wantReason(t, err, wire.ReasonBadEmoji)
	}
	_, err := react("bob", "👍", "toggle")
	wantReason(t, err, wire.ReasonBadRequest)
	_, err = e.svc.React(bg, "bob", actions.ReactionRequest{ConversationID: conv, Seq: seq + 50, Emoji: "👍", Op: actions.OpAdd})
	wantReason(t, err, wire.ReasonBadSeq)
	_, err = react("carol", "👍", actions.OpAdd)
	wantReason(t, err, wire.ReasonNotConversationMember)

	// Single emojis of every shape: ZWJ family, flag, keycap, skin tone.
	for _, ok := range []string{"👍", "👨‍👩‍👧‍👦", "🇫🇷", "1️⃣", "👍🏽", "❤️"} {
		if res, err := react("bob", ok, actions.OpAdd); err != nil || !res.Changed || res.Count != 1 {
			t.Fatalf("react %q: %+v %v", ok, res, err)
		}
	}
	// Adding again changes nothing; alice joins in on 👍.
	if res, err := react("bob", "👍", actions.OpAdd); err != nil || res.Changed || res.Count != 1 {
		t.Fatalf("repeated add: %+v %v", res, err)
	}
	if res, err := react("alice", "👍", actions.OpAdd); err != nil || res.Count != 2 {
		t.Fatalf("second reactor: %+v %v", res, err)
	}
	m := e.pullOne("alice", conv, seq)
	if len(m.Reactions) != 6 || m.Reactions[0].Emoji != "👍" || m.Reactions[0].Count != 2 || !m.Reactions[0].Me || m.Reactions[1].Me {
		t.Fatalf("alice's view of the reactions: %+v", m.Reactions)
	}
	if res, err := react("bob", "👍", actions.OpRemove); err != nil || !res.Changed || res.Count != 1 {
		t.Fatalf("remove: %+v %v", res, err)
	}
	// 8 changes were announced, each to both parties.
	for _, u := range []string{"alice", "bob"} {
		n := e.reg.WaitNotices(t, u, actions.MsgReactionNotification, 8)
		last := n[len(n)-1]
		if last["op"] != "remove" || last["emoji"] != "👍" || last["user_id"] != "bob" || last["count"].(float64) != 1 {
			t.Fatalf("%s: last reaction notice %v", u, last)
		}
	}
}

// TestThousandReactionsFromOneUser: the cap holds (msg.max_reactions_per_user).
func TestThousandReactionsFromOneUser(t *testing.T) {
	e := newEnv(t, envOpts{tweak: func(c *configs.Config) { c.Msg.MaxReactionsPerUser = 5 }})
	e.addUsers("alice", "bob")
	conv := domain.SingleConversationID("alice", "bob")
	seq := e.send("alice", "bob", "hi")
	accepted, refused := 0, 0
	for i := range 1000 {
		emoji := string(rune(0x1F600 + i%64))
		_, err := e.svc.React(bg, "bob", actions.ReactionRequest{ConversationID: conv, Seq: seq, Emoji: emoji, Op: actions.OpAdd})
		switch {
		case err == nil:
			accepted++
		case wire.FromError(err).Reason == wire.ReasonTooManyReactions:
			refused++
		default:
			t.Fatal(err)
		}
	}
	m := e.pullOne("bob", conv, seq)
	if len(m.Reactions) != 5 {
		t.Fatalf("bob holds %d reactions, want 5 (%d accepted, %d refused)", len(m.Reactions), accepted, refused)
	}
	if refused < 900 {
		t.Fatalf("only %d of 1000 refused", refused)
	}
}

// TestReactionsFromHundredMembersAtOnce are counted exactly.
func TestReactionsFromHundredMembersAtOnce(t *testing.T) {
	e := newEnv(t, envOpts{tweak: func(c *configs.Config) { c.Group.MaxIDsPerRequest = 200 }})
	users := make([]string, 100)
	for i := range users {
		users[i] = fmt.Sprintf("u%03d", i)
	}
	e.addUsers(users...)
	g := e.createGroup(users[0], users[1:]...)
	conv := domain.GroupConversationID(g)
	seq := e.sendGroup(users[0], g, "react!")
	var wg gosync.WaitGroup
	errs := make(chan error, len(users))
	for _, u := range users {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := e.svc.React(bg, u, actions.ReactionRequest{ConversationID: conv, Seq: seq, Emoji: "🎉", Op: actions.OpAdd})
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	m := e.pullOne(users[7], conv, seq)
	if len(m.Reactions) != 1 || m.Reactions[0].Count != 100 || !m.Reactions[0].Me {
		t.Fatalf("reactions %+v, want 🎉 × 100", m.Reactions)
	}
	// Every reaction reached the sender's devices exactly once.
	n := e.reg.WaitNotices(t, users[0], actions.MsgReactionNotification, 100)
	seen := map[string]bool{}
	for _, x := range n {
		u := x["user_id"].(string)
		if seen[u] {
			t.Fatalf("%s's reaction announced twice", u)
		}
		seen[u] = true
	}
}
