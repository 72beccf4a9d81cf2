package ws

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/nexo-im/nexo/gateway/wire"
)

// A client that stops reading is closed as a slow consumer while a fast
// client on the same server receives every push, in order.
func TestSlowConsumer(t *testing.T) {
	cfg := testConfig()
	cfg.SendQueue = 8
	cfg.HighWater = 4
	cfg.CloseUnwritableAfter = 100 * time.Millisecond
	e := newEnv(t, cfg)
	const n = 400
	fast := e.dialWith("fast", 1, time.Time{}, dialOptions{bufFrames: n + 8})
	e.dialWith("slow", 1, time.Time{}, dialOptions{noRead: true})

	// 32 KiB pushes: a few MB fill the socket buffers of the slow client.
	pad := strings.Repeat("x", 32<<10)
	ctx := context.Background()
	slowAccepted := 0
	for i := 0; i < n; i++ {
		f := mustEncode(wire.Response{ReqIdentifier: wire.PushMsg, Data: map[string]any{"seq": i, "pad": pad}})
		if e.srv.PushToUser(ctx, "fast", f, "") != 1 {
			t.Fatalf("push %d to the fast client refused", i)
		}
		slowAccepted += e.srv.PushToUser(ctx, "slow", f, "")
		// The fast client has each push before the next one is published,
		// while the slow one is piling up and then gets closed.
		got := fast.next()
		var d struct{ Seq int }
		if err := json.Unmarshal(got.Data, &d); err != nil || got.ReqIdentifier != wire.PushMsg || d.Seq != i {
			t.Fatalf("fast client frame %d: id %d seq %d err %v", i, got.ReqIdentifier, d.Seq, err)
		}
	}
	t.Logf("slow accepted %d of %d", slowAccepted, n)
	waitFor(t, 10*time.Second, "slow client closed", func() bool { return !e.srv.Online("slow") })
	if slowAccepted >= n {
		t.Fatalf("slow client accepted all %d pushes", n)
	}
	if got := testutil.ToFloat64(e.srv.metrics.slowCloses); got != 1 {
		t.Fatalf("slow consumer closes = %v, want 1", got)
	}
	if !e.srv.Online("fast") {
		t.Fatal("fast client was closed")
	}
}
