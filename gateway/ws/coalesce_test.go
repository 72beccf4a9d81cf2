package ws

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
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
