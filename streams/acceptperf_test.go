package streams_test

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/nexo-im/nexo/store/storetest"
	"github.com/nexo-im/nexo/streams"
)

// TestAcceptPerfLine: with WithAcceptPerfLog every send writes one
// "accept perf" line with the script call's and the whole accept's
// durations and the stream's length and pending count; without it, none.
func TestAcceptPerfLine(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, 100)
	for shard := range f.keys.Shards() {
		if err := streams.EnsureGroup(ctx, f.rdb, f.keys.ToSave(shard), f.keys.SaveGroup()); err != nil {
			t.Fatal(err)
		}
	}
	for _, on := range []bool{true, false} {
		logs := &storetest.LogBuffer{}
		log := slog.New(slog.NewTextHandler(logs, nil))
		var opts []streams.AcceptOption
		if on {
			opts = append(opts, streams.WithAcceptPerfLog(log))
		}
		acc := streams.NewAccepter(f.rdb, f.keys, f.seqs, 100, time.Hour, opts...)
		a, err := acc.Accept(ctx, streams.AcceptRequest{Msg: msg("perf", "b", fmt.Sprint(on)), Route: streams.SaveFirst, Append: true})
		if err != nil {
			t.Fatal(err)
		}
		lines := strings.Count(logs.String(), `msg="accept perf"`)
		if !on {
			if lines != 0 {
				t.Fatalf("perf line written with the option off:\n%s", logs)
			}
			continue
		}
		if lines != 1 {
			t.Fatalf("%d perf lines, want 1:\n%s", lines, logs)
		}
		for _, want := range []string{"server_msg_id=" + a.ServerMsgID, "seq=1", "status=ok", "append=true", "write_ms=", "accept_ms=",
			"stream=" + f.keys.ToSave(a.Shard), "stream_len=1", "pending=0"} {
			if !strings.Contains(logs.String(), want) {
				t.Errorf("perf line lacks %q:\n%s", want, logs)
			}
		}
	}
}
