package ws

import (
	"context"
	"encoding/json"
	"fmt"
	"runtime/debug"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nexo-im/nexo/gateway/wire"
)

// Frames queued while a write is in progress go out together in the next
// write, in order: one WriteTexts per wakeup, not one per frame.
func TestQueuedFramesShareOneWrite(t *testing.T) {
	s := newTestServer(t, testConfig())
	ft := newFakeTransport(true)
	c, _ := startFakeSession(t, s, "alice", ft)
	const n = 20
	want := make([]string, n)
	for i := range n {
		f := mustEncode(wire.Response{ReqIdentifier: wire.PushMsg, MsgIncr: fmt.Sprint(i)})
		want[i] = "data " + string(f.Bytes())
		if !c.Send(f) {
			t.Fatalf("send %d refused", i)
		}
	}
	close(ft.hold)
	waitFor(t, 5*time.Second, "every frame written", func() bool { return len(ft.writes()) == n })
	if got := ft.writes(); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("frames out of order:\n%q", got)
	}
	ft.mu.Lock()
	batches := append([]int(nil), ft.batches...)
	ft.mu.Unlock()
	// The writer holds the first frame(s) while the rest queue behind it.
	if len(batches) > 2 {
		t.Fatalf("%d frames took %d writes %v, want at most 2", n, len(batches), batches)
	}
}

// Coalesced frames are valid WebSocket frames at every length encoding
// (7-bit, 16-bit, 64-bit) and past the coalescing buffer, on both
// transports, and arrive in order.
func TestCoalescedFramesOnTheWire(t *testing.T) {
	for _, tr := range []struct {
		name string
		opts []envOption
	}{{"netpoll", nil}, {"standard", []envOption{withStandardTransport()}}} {
		t.Run(tr.name, func(t *testing.T) {
			e := newEnv(t, testConfig(), tr.opts...)
			sizes := []int{0, 1, 100, 125, 126, 127, 1000, 65535, 65536, 70000, 200000, 3, 5}
			cl := e.dialWith("bob", 1, time.Time{}, dialOptions{bufFrames: 4 * len(sizes)})
			ctx := context.Background()
			for round := range 3 {
				for i, n := range sizes {
					f := mustEncode(wire.Response{ReqIdentifier: wire.PushMsg, MsgIncr: fmt.Sprintf("%d-%d", round, i),
						Data: map[string]string{"pad": strings.Repeat("y", n)}})
					if e.srv.PushToUser(ctx, "bob", f, "") != 1 {
						t.Fatalf("push %d refused", i)
					}
				}
			}
			for round := range 3 {
				for i, n := range sizes {
					got := cl.next()
					var d struct{ Pad string }
					if err := json.Unmarshal(got.Data, &d); err != nil || got.MsgIncr != fmt.Sprintf("%d-%d", round, i) || len(d.Pad) != n {
						t.Fatalf("frame %d-%d: msg_incr %q, pad %d bytes, want %d (err %v)", round, i, got.MsgIncr, len(d.Pad), n, err)
					}
				}
			}
		})
	}
}

// stackWriter is a fakeTransport that notes, for each WriteTexts, whether
// the connection's reader goroutine made the call.
type stackWriter struct {
	*fakeTransport
	mu       sync.Mutex
	byReader []bool
	started  chan struct{}
}

func (w *stackWriter) WriteTexts(texts [][]byte, deadline time.Time) error {
	stack := string(debug.Stack())
	w.mu.Lock()
	w.byReader = append(w.byReader, strings.Contains(stack, ".(*Conn).readLoop("))
	w.mu.Unlock()
	select {
	case w.started <- struct{}{}:
	default:
	}
	return w.fakeTransport.WriteTexts(texts, deadline)
}

// An answer with nothing queued ahead of it is written by the reader
// itself, without starting the writer goroutine (a goroutine start and
// wake-up per request at light load), and a push queued while that write
// is in flight follows it, in order.
func TestAnswerWrittenByTheReader(t *testing.T) {
	s := newTestServer(t, testConfig())
	installTestHandlers(s)
	ft := newFakeTransport(true)
	w := &stackWriter{fakeTransport: ft, started: make(chan struct{}, 1)}
	c := s.newConn("alice", 1, "jti", time.Time{}, "")
	runFakeSession(t, s, c, w)
	waitFor(t, 5*time.Second, "registration", func() bool { return s.Online("alice") })

	ft.inbound <- []byte(`{"req_identifier":9001,"msg_incr":"1","data":{}}`)
	select {
	case <-w.started:
	case <-time.After(5 * time.Second):
		t.Fatal("the answer was never written")
	}
	if !c.Send(pushFrame) {
		t.Fatal("push refused while the answer is being written")
	}
	close(ft.hold)
	waitFor(t, 5*time.Second, "answer and push written", func() bool { return len(ft.writes()) == 2 })
	got := ft.writes()
	if !strings.Contains(got[0], `"msg_incr":"1"`) || got[1] != "data "+string(pushFrame.Bytes()) {
		t.Fatalf("writes out of order: %q", got)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if want := []bool{true, false}; fmt.Sprint(w.byReader) != fmt.Sprint(want) {
		t.Fatalf("written by the reader: %v, want %v (the answer by the reader, the push by the writer)", w.byReader, want)
	}
}
