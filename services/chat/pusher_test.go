package chat

import (
	"context"
	"regexp"
	"slices"
	"testing"

	"github.com/nexo-im/nexo/domain"
	"github.com/nexo-im/nexo/gateway/wire"
	"github.com/nexo-im/nexo/gateway/ws"
)

// pushRecorder is the Connections that keeps what it is handed.
type pushRecorder struct {
	users  [][]string
	except []string
	pushes []domain.Push
}

func (r *pushRecorder) PushToUser(ctx context.Context, userID string, p domain.Push, exceptConn string) int {
	return r.PushToUsers(ctx, []string{userID}, p, exceptConn)
}

func (r *pushRecorder) PushToUsers(_ context.Context, userIDs []string, p domain.Push, exceptConn string) int {
	r.users, r.except, r.pushes = append(r.users, userIDs), append(r.except, exceptConn), append(r.pushes, p)
	return len(userIDs)
}

var frameTS = regexp.MustCompile(`"ts":\d+`)

// TestPushFramesUnchanged: the frames the gateway encodes from the
// Pusher's pushes are byte for byte the ones the Pusher encoded itself
// before it pushed in domain terms (ts aside, the time of encoding): 2001
// tagged with its message for the push audit, 2101, and the 3001
// save_failed error with its err_code, err_msg and data.
func TestPushFramesUnchanged(t *testing.T) {
	m := domain.Message{ServerMsgID: "s1", ClientMsgID: "c1", ConversationID: "si_alice_bob", Seq: 7, SenderID: "alice", RecvID: "bob",
		SessionType: domain.SessionSingle, MsgType: domain.MsgText, Content: domain.Content{Text: "hi"}, Status: domain.StatusNormal, SendAt: 1764000000000}
	ack := domain.Ack{Type: domain.AckSaved, ServerMsgID: "s1", ClientMsgID: "c1", ConversationID: "si_alice_bob", Seq: 7, SendAt: 1764000000000, UserID: "alice"}
	saveFailed := wire.Lookup(wire.ReasonSaveFailed)
	ref := domain.RefOf(&m)
	cases := []struct {
		name   string
		push   func(p *Pusher)
		users  []string
		except string
		was    wire.Response // what the Pusher encoded itself before
		tag    *domain.MsgRef
		golden string // the frame as a client reads it; "" to skip
	}{{
		name: "2001", push: func(p *Pusher) { p.PushMessage(context.Background(), &m, []string{"alice", "bob"}, "conn-1") },
		users: []string{"alice", "bob"}, except: "conn-1",
		was: wire.Response{ReqIdentifier: wire.PushMsg, Data: ToJSON(&m)}, tag: &ref,
	}, {
		name: "2101", push: func(p *Pusher) { p.PushAck(context.Background(), "alice", ack) },
		users: []string{"alice"},
		was: wire.Response{ReqIdentifier: wire.PushAck, Data: AckPushJSON{AckType: "saved", ServerMsgID: "s1", ClientMsgID: "c1",
			ConversationID: "si_alice_bob", Seq: 7, SendAt: 1764000000000, UserID: "alice"}},
	}, {
		name: "3001 save_failed", push: func(p *Pusher) { p.PushSaveFailed(context.Background(), &m) },
		users: []string{"alice"},
		was: wire.Response{ReqIdentifier: wire.PushError, ErrCode: saveFailed.ErrCode, ErrMsg: string(saveFailed.Reason),
			Data: SaveFailedJSON{Reason: string(saveFailed.Reason), ClientMsgID: "c1", ServerMsgID: "s1", ConversationID: "si_alice_bob", Seq: 7}},
		golden: `{"req_identifier":3001,"msg_incr":"","operation_id":"","err_code":1504,"err_msg":"save_failed",` +
			`"data":{"reason":"save_failed","client_msg_id":"c1","server_msg_id":"s1","conversation_id":"si_alice_bob","seq":7},"ts":0}`,
	}}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			rec := &pushRecorder{}
			c.push(NewPusher(rec))
			if len(rec.pushes) != 1 || !slices.Equal(rec.users[0], c.users) || rec.except[0] != c.except {
				t.Fatalf("pushed %d to %v except %q, want one to %v except %q", len(rec.pushes), rec.users, rec.except, c.users, c.except)
			}
			got, err := ws.EncodePush(rec.pushes[0])
			if err != nil {
				t.Fatal(err)
			}
			was, err := ws.EncodeFrame(c.was)
			if err != nil {
				t.Fatal(err)
			}
			g, w := frameTS.ReplaceAllString(string(got.Bytes()), `"ts":0`), frameTS.ReplaceAllString(string(was.Bytes()), `"ts":0`)
			if g != w {
				t.Fatalf("frame\n%s\nwas\n%s", g, w)
			}
			if c.golden != "" && g != c.golden {
				t.Fatalf("frame\n%s\nwant\n%s", g, c.golden)
			}
			tag, tagged := got.Msg()
			if tagged != (c.tag != nil) || (c.tag != nil && tag != *c.tag) {
				t.Fatalf("audit tag %+v (%v), want %+v", tag, tagged, c.tag)
			}
		})
	}
}

// BenchmarkEncodePushFrame is the cost of encoding one 2001 push of a
// 64-byte text message: once per message whatever the number of recipients.
func BenchmarkEncodePushFrame(b *testing.B) {
	m := domain.Message{ServerMsgID: "01JDZ6Q8V7XKQ2M3N4P5R6S7T8", ClientMsgID: "c-0123456789abcdef", ConversationID: "si_alice_bob",
		Seq: 12345, SenderID: "alice", RecvID: "bob", SessionType: domain.SessionSingle, MsgType: 101,
		Content: domain.Content{Text: "0123456789012345678901234567890123456789012345678901234567890123"}, SendAt: 1764000000000}
	ref := domain.RefOf(&m)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := ws.EncodePush(domain.Push{Kind: domain.PushMessage, Data: ToJSON(&m), Msg: &ref}); err != nil {
			b.Fatal(err)
		}
	}
}
