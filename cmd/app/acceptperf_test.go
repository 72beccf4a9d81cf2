package app

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/nexo-im/nexo/streams"
)

// TestAcceptPerfLogAndInstanceID: log.accept_perf on, every send writes
// one "accept perf" line with the accept's timings and its stream's
// length and pending count; off (the default), none. Either way the
// message's stream entry names this instance (instance_id).
func TestAcceptPerfLogAndInstanceID(t *testing.T) {
	t.Parallel()
	for _, on := range []bool{true, false} {
		name := map[bool]string{true: "on", false: "off"}[on]
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			cfg := embeddedConfig(t)
			cfg.Log.AcceptPerf = on
			cfg.TwoPhase.Enabled = true
			cfg.Streams.TrimInterval = time.Hour // the entry stays to be read
			a, base, logs, _ := runApp(t, cfg)
			user(t, base, "perfb")
			alice := dial(t, base, "perfa", user(t, base, "perfa"))
			ack := alice.send("perfb", "perf-1", "hi")
			id, _ := ack.field("server_msg_id").(string)
			conv, _ := ack.field("conversation_id").(string)
			if ack.ErrCode != 0 || id == "" {
				t.Fatalf("send: %+v", ack)
			}
			var line map[string]string
			for _, raw := range strings.Split(logs.String(), "\n") {
				if strings.Contains(raw, `msg="accept perf"`) {
					line = logLine(raw)
				}
			}
			if !on {
				if line != nil {
					t.Fatalf("accept perf line with log.accept_perf off: %v", line)
				}
			} else {
				// Written before the ACK: no wait.
				want(t, "accept perf", line, map[string]string{"level": "INFO", "server_msg_id": id, "conversation_id": conv,
					"seq": "1", "status": "ok", "append": "true", "write_ms": "*", "accept_ms": "*", "stream": "*",
					"stream_len": "*", "pending": "*"})
			}

			keys := streams.NewKeys(cfg.Redis.KeyPrefix, cfg.Streams.Shards)
			xs, err := a.rdb.XRange(context.Background(), keys.ToSave(keys.Shard(conv)), "-", "+").Result()
			if err != nil || len(xs) != 1 {
				t.Fatalf("to_save: %v, %v", xs, err)
			}
			if got := xs[0].Values["instance_id"]; got != a.member.Self().ID || got == "" {
				t.Fatalf("entry instance_id = %v, want %q", got, a.member.Self().ID)
			}
		})
	}
}
