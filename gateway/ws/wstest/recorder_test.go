package wstest_test

import (
	"context"
	"fmt"
	"log/slog"
	"testing"

	"github.com/nexo-im/nexo/domain"
	"github.com/nexo-im/nexo/gateway/wire"
	"github.com/nexo-im/nexo/gateway/ws"
	"github.com/nexo-im/nexo/gateway/ws/wstest"
)

var bg = context.Background()

func ack(seq int64) domain.Push {
	return domain.Push{Kind: domain.PushAck, Data: map[string]any{"ack_type": "read", "seq": seq}}
}

// Pushes reach the connections a user is online on, but the excepted one,
// each recorded once and decoded; an offline user gets nothing.
func TestRecorderRecordsPerConnection(t *testing.T) {
	rec := wstest.NewRecorder(wstest.OnlyConnected)
	rec.Connect("alice", "alice/phone", "alice/desktop")
	rec.Connect("bob")
	p := ws.NewPushes(rec, slog.New(slog.DiscardHandler))

	if n := p.PushToUsers(bg, []string{"alice", "bob", "carol"}, ack(7), "alice/phone"); n != 2 {
		t.Fatalf("accepted by %d connections, want 2", n)
	}
	if got := rec.Pushes("alice"); len(got) != 1 || got[0].Conn != "alice/desktop" || got[0].Code != wire.PushAck ||
		got[0].Str("ack_type") != "read" || got[0].Seq() != 7 {
		t.Fatalf("alice got %+v", got)
	}
	if got := rec.Pushes("bob"); len(got) != 1 || got[0].Conn != "bob/c1" {
		t.Fatalf("bob got %+v", got)
	}
	if rec.Online("carol") || len(rec.Pushes("carol")) != 0 {
		t.Fatal("carol, never connected, is online or got a push")
	}
	if !p.PushToConn(bg, "alice", "alice/phone", ack(8)) || p.PushToConn(bg, "alice", "alice/tablet", ack(9)) {
		t.Fatal("PushToConn: want accepted by alice/phone, refused by a connection alice does not have")
	}
	if got := rec.PushesOf("alice", wire.PushAck); len(got) != 2 || got[1].Conn != "alice/phone" || got[1].Seq() != 8 {
		t.Fatalf("alice's acks %+v", got)
	}
	if rec.ConnCount() != 3 {
		t.Fatalf("%d connections, want 3", rec.ConnCount())
	}
	rec.Reset()
	if len(rec.Pushes("alice")) != 0 || !rec.Online("alice") {
		t.Fatal("Reset kept pushes or dropped connections")
	}
}

// With EveryoneOnline a user never connected is online on one connection.
func TestRecorderEveryoneOnline(t *testing.T) {
	rec := wstest.NewRecorder(wstest.EveryoneOnline)
	p := ws.NewPushes(rec, slog.New(slog.DiscardHandler))
	if !rec.Online("dave") || p.PushToUser(bg, "dave", ack(1), "") != 1 || rec.Pushes("dave")[0].Conn != "dave/c1" {
		t.Fatalf("dave: online %v, got %+v", rec.Online("dave"), rec.Pushes("dave"))
	}
}

// The Wait methods return once pushes from another goroutine satisfy them;
// Notices picks a kind of notification out of the 2001 pushes, and Seq
// reads a 2102's max_seq.
func TestRecorderWaits(t *testing.T) {
	rec := wstest.NewRecorder(wstest.EveryoneOnline)
	p := ws.NewPushes(rec, slog.New(slog.DiscardHandler))
	const kind domain.MsgType = 1601
	go func() {
		for i := range 5 {
			p.PushToUser(bg, "alice", domain.Push{Kind: domain.PushMessage, Data: map[string]any{
				"seq": i + 1, "msg_type": kind, "content": map[string]any{"custom": map[string]any{"n": i}}}}, "")
			p.PushToUser(bg, "alice", domain.Push{Kind: domain.PushMessage, Data: map[string]any{"seq": i + 100, "msg_type": 101}}, "")
		}
		p.PushToUser(bg, "alice", domain.Push{Kind: domain.PushGroupNotify, Data: map[string]any{"max_seq": 42}}, "")
	}()

	got := rec.WaitNotices(t, "alice", kind, 5)
	if fmt.Sprint(got) != "[map[n:0] map[n:1] map[n:2] map[n:3] map[n:4]]" {
		t.Fatalf("notices %v", got)
	}
	summary := rec.WaitPush(t, "alice", wire.PushGroupNotify, func(p wstest.Push) bool { return p.Seq() == 42 })
	if summary.Conn != "alice/c1" {
		t.Fatalf("summary %+v", summary)
	}
	msgs := rec.WaitFor(t, "alice", wire.PushMsg, "ten 2001", func(ps []wstest.Push) bool { return len(ps) == 10 })
	if msgs[9].Int("seq") != 104 || msgs[9].Notice(kind) != nil {
		t.Fatalf("last 2001 %+v", msgs[9])
	}
}
