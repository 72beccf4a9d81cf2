package workers_test

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/redis/go-redis/v9"

	"github.com/nexo-im/nexo/domain"
	"github.com/nexo-im/nexo/streams"
	"github.com/nexo-im/nexo/workers"
)

type failingFanout struct{}

func (failingFanout) FanoutGroup(context.Context, *domain.Message, string) error {
	return errors.New("member cache down")
}

type nopPusher struct{}

func (nopPusher) PushMessage(context.Context, *domain.Message, []string, string) {}
func (nopPusher) PushAck(context.Context, string, domain.Ack)                    {}
func (nopPusher) PushSaveFailed(context.Context, *domain.Message)                {}

// TestDeliverFailuresAreCounted: a failed deliver batch counts in
// nexo_deliver_failures_total, is returned for a retry (issue 15 item 4)
// and writes a warn audit line naming the message, its sender and
// sending connection (item 3).
func TestDeliverFailuresAreCounted(t *testing.T) {
	m := workers.NewMetrics(nil)
	var logs strings.Builder
	audit := domain.NewAudit(slog.New(slog.NewJSONHandler(&logs, nil)), "inst-9", 10, 10)
	h := workers.NewDeliverHandler(workers.DeliverDeps{Keys: streams.NewKeys("t", 1), Pusher: nopPusher{},
		Groups: failingFanout{}, Metrics: m, Log: slog.New(slog.DiscardHandler), Audit: audit})
	msg := domain.Message{ServerMsgID: "s1", ClientMsgID: "c1", ConversationID: "sg_g1", SenderID: "alice",
		GroupID: "g1", SessionType: domain.SessionGroup, MsgType: domain.MsgText, Content: domain.Content{Text: "hi"}}
	x := redis.XMessage{ID: "1-0", Values: map[string]any{"seq": "1", "r": string(streams.SaveFirst), "c": "conn-3", "m": streams.EncodeMessage(&msg)}}
	if err := h.Handle(context.Background(), 0, []redis.XMessage{x}); err == nil {
		t.Fatal("a failing fanout did not fail the batch")
	}
	if got := testutil.ToFloat64(m.DeliverFailures); got != 1 {
		t.Fatalf("nexo_deliver_failures_total = %v, want 1", got)
	}
	if got := testutil.ToFloat64(m.PublishFailures.WithLabelValues("deliver")); got != 0 {
		t.Fatalf("publish failures = %v before any commit", got)
	}
	var line map[string]any
	if err := json.Unmarshal([]byte(logs.String()), &line); err != nil {
		t.Fatalf("audit line %q: %v", logs.String(), err)
	}
	for k, v := range map[string]any{"level": "WARN", "msg": "audit", "point": "deliver", "result": "failed", "err": "member cache down",
		"server_msg_id": "s1", "conversation_id": "sg_g1", "seq": 1.0, "user_id": "alice", "conn_id": "conn-3", "instance_id": "inst-9"} {
		if line[k] != v {
			t.Errorf("%s = %v, want %v (line %v)", k, line[k], v, line)
		}
	}
}
