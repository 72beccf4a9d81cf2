package actions_test

import (
	"fmt"
	"testing"

	"github.com/nexo-im/nexo/domain"
	"github.com/nexo-im/nexo/services/actions"
	"github.com/nexo-im/nexo/services/chat"
	"github.com/nexo-im/nexo/store"
	"github.com/nexo-im/nexo/streams"
)

// BenchmarkPullPage measures what the actions add to a pull of a full
// page (100 messages, a third with reactions, one hidden, ten quotes) on
// MariaDB: "plain" is the puller without annotations, "annotated" with
// them (hidden seqs, reactions, quoted messages' state).
func BenchmarkPullPage(b *testing.B) {
	e := newEnv(b, envOpts{})
	e.addUsers("alice", "bob")
	conv := domain.SingleConversationID("alice", "bob")
	var last int64
	for i := range 100 {
		req := chat.SendRequest{SessionType: 1, RecvID: "bob", Content: chat.ContentJSON{Text: fmt.Sprint("m", i)}}
		if i >= 90 {
			req.Quote = &chat.QuoteRequest{Seq: int64(i - 50)}
		}
		ack, err := e.sendReq("alice", req)
		if err != nil {
			b.Fatal(err)
		}
		last = ack.Seq
	}
	e.waitSaved(conv, last)
	for s := int64(1); s <= last; s += 3 {
		if _, err := e.svc.React(bg, "bob", actions.ReactionRequest{ConversationID: conv, Seq: s, Emoji: "👍", Op: actions.OpAdd}); err != nil {
			b.Fatal(err)
		}
	}
	if _, err := e.svc.Delete(bg, "bob", actions.DeleteRequest{ConversationID: conv, Seqs: []int64{5}, Scope: actions.ScopeSelf}); err != nil {
		b.Fatal(err)
	}
	plain := chat.NewPuller(e.msgs, store.NewSeqRepo(e.db), e.members, streams.NewInFlightReader(e.rdb, streams.NewKeys(e.keys.Prefix, e.cfg.Streams.Shards)))
	req := chat.PullRequest{ConversationID: conv, BeginSeq: 1, Limit: 100}
	for name, p := range map[string]*chat.Puller{"plain": plain, "annotated": e.puller} {
		b.Run(name, func(b *testing.B) {
			for b.Loop() {
				res, err := p.Pull(bg, "bob", req)
				if err != nil || len(res.Messages) != 100 {
					b.Fatalf("%d messages, %v", len(res.Messages), err)
				}
			}
		})
	}
}
