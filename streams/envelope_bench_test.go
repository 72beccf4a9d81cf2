package streams

import (
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/nexo-im/nexo/domain"
)

// BenchmarkDecode decodes a typical single-chat entry (64-byte text), as
// each pipeline stage does for every entry it reads. Run with -benchmem:
// allocations are the steady figure on a shared machine.
func BenchmarkDecode(b *testing.B) {
	m := domain.Message{ServerMsgID: "0193a4b2-7c1d-7e3f-9a8b-1c2d3e4f5a6b", ClientMsgID: "nb1234abcd-123456",
		ConversationID: "si_nb1234abcd_r12_nb1234abcd_s12", SenderID: "nb1234abcd_s12", RecvID: "nb1234abcd_r12",
		SessionType: domain.SessionSingle, MsgType: domain.MsgText, SendAt: 1763900000000, Seq: 7,
		Content: domain.Content{Text: "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"}}
	e := Entry{ID: "1-0", Msg: m, Route: SaveFirst, OriginConn: "c1", AcceptedAt: 1763900000001}
	args := entryArgs(&e)
	x := redis.XMessage{ID: e.ID, Values: map[string]any{}}
	for i := 0; i+1 < len(args); i += 2 {
		x.Values[args[i].(string)] = args[i+1]
	}
	b.ReportAllocs()
	for b.Loop() {
		got, err := Decode(x)
		if err != nil || got.Msg.Seq != 7 || got.Msg.Content.Text != m.Content.Text {
			b.Fatalf("%+v %v", got, err)
		}
	}
}

// BenchmarkEncodeMessage encodes the same entry's body, as the accept
// step does once per message.
func BenchmarkEncodeMessage(b *testing.B) {
	m := domain.Message{ServerMsgID: "0193a4b2-7c1d-7e3f-9a8b-1c2d3e4f5a6b", ClientMsgID: "nb1234abcd-123456",
		ConversationID: "si_nb1234abcd_r12_nb1234abcd_s12", SenderID: "nb1234abcd_s12", RecvID: "nb1234abcd_r12",
		SessionType: domain.SessionSingle, MsgType: domain.MsgText, SendAt: 1763900000000,
		Content: domain.Content{Text: "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"}}
	b.ReportAllocs()
	for b.Loop() {
		if EncodeMessage(&m) == "" {
			b.Fatal("empty body")
		}
	}
}
