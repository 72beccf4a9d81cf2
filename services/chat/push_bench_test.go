package chat

import (
	"testing"

	"github.com/nexo-im/nexo/domain"
	"github.com/nexo-im/nexo/gateway/wire"
	"github.com/nexo-im/nexo/gateway/ws"
)

// BenchmarkEncodePushFrame is the cost of encoding one 2001 push of a
// 64-byte text message: once per message whatever the number of recipients.
func BenchmarkEncodePushFrame(b *testing.B) {
	m := domain.Message{ServerMsgID: "01JDZ6Q8V7XKQ2M3N4P5R6S7T8", ClientMsgID: "c-0123456789abcdef", ConversationID: "si_alice_bob",
		Seq: 12345, SenderID: "alice", RecvID: "bob", SessionType: domain.SessionSingle, MsgType: 101,
		Content: domain.Content{Text: "0123456789012345678901234567890123456789012345678901234567890123"}, SendAt: 1764000000000}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := ws.EncodeFrame(wire.Response{ReqIdentifier: wire.PushMsg, Data: ToJSON(&m)}); err != nil {
			b.Fatal(err)
		}
	}
}
