package sync_test

import (
	"testing"

	"github.com/nexo-im/nexo/domain"
	"github.com/nexo-im/nexo/services/chat"
)

// TestRetryAfterIdempotencyRecordExpired: once Redis no longer remembers a
// saved message's (sender, client_msg_id) — its record expired, or Redis
// lost its data as the embedded mode does at every restart — a retry is
// answered with the original's ACK(saved) and seq, and no new seq is issued
// (issue 15 item 2).
func TestRetryAfterIdempotencyRecordExpired(t *testing.T) {
	t.Parallel()
	for name, mode := range map[string]envOpts{"two-phase": {mode: saveFirst}, "synchronous": {mode: syncMode}} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, mode)
			e.addUsers("alice", "bob")
			conv := domain.SingleConversationID("alice", "bob")
			req := chat.SendRequest{ClientMsgID: "retry-me", SessionType: int(domain.SessionSingle), RecvID: "bob",
				MsgType: int(domain.MsgText), Content: chat.ContentJSON{Text: "once"}}
			first, err := e.chat.Send(bg, chat.Origin{UserID: "alice"}, req)
			if err != nil {
				t.Fatal(err)
			}
			e.waitSaved(conv, first.Seq)
			// The record expires (or Redis loses it).
			if err := e.rdb.Del(bg, e.skeys.Idem(e.skeys.Shard(conv), "alice", "retry-me")).Err(); err != nil {
				t.Fatal(err)
			}
			retry, err := e.chat.Send(bg, chat.Origin{UserID: "alice"}, req)
			if err != nil {
				t.Fatal(err)
			}
			if retry.AckType != string(domain.AckSaved) || retry.Seq != first.Seq || retry.ServerMsgID != first.ServerMsgID || retry.SendAt != first.SendAt {
				t.Fatalf("retry answered %+v, want the original %+v as saved", retry, first)
			}
			// No seq was issued for the retry: the next message takes the next one.
			next := e.send("alice", "bob")
			if next != first.Seq+1 {
				t.Fatalf("next seq %d after the retry, want %d (a seq was issued for the retry)", next, first.Seq+1)
			}
		})
	}
}
