package sync_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	gosync "sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/nexo-im/nexo/domain"
	"github.com/nexo-im/nexo/services/sync"
	"github.com/nexo-im/nexo/store"
)

// memCursors is a CursorStore in memory.
type memCursors struct {
	mu gosync.Mutex
	m  map[store.CursorKey]domain.Cursor
}

func (s *memCursors) Load(_ context.Context, keys []store.CursorKey) (map[store.CursorKey]domain.Cursor, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[store.CursorKey]domain.Cursor{}
	for _, k := range keys {
		out[k] = s.m[k]
	}
	return out, nil
}

func (s *memCursors) Advance(_ context.Context, cs []domain.Cursor) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, c := range cs {
		s.m[store.CursorKey{UserID: c.UserID, ConversationID: c.ConversationID}] = c
	}
	return 1, nil
}

// savedAt answers every seq as saved at one time, counting the lookups.
type savedAt struct {
	at      int64
	lookups int
}

func (s *savedAt) Saved(_ context.Context, keys []store.SeqKey) (map[store.SeqKey]store.SavedRef, error) {
	s.lookups++
	out := map[store.SeqKey]store.SavedRef{}
	for _, k := range keys {
		out[k] = store.SavedRef{ServerMsgID: k.ConversationID + "#" + string(rune('0'+k.Seq)), SavedAt: s.at}
	}
	return out, nil
}

// histogram returns the sample count and sum of a histogram of reg.
func histogram(t *testing.T, reg *prometheus.Registry, name string) (uint64, float64) {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == name {
			h := mf.GetMetric()[0].GetHistogram()
			return h.GetSampleCount(), h.GetSampleSum()
		}
	}
	t.Fatalf("no metric %s", name)
	return 0, 0
}

// TestCursorLatenciesAndAuditLines: a delivered ACK observes saved →
// delivered (from the message's saved time), a later read ACK of the same
// seq observes delivered → read, a read of a seq this instance did not see
// delivered is not observed; each move writes a cursor audit line with the
// member, its connection and the cursor before and after (issue 15 items
// 3 and 4).
func TestCursorLatenciesAndAuditLines(t *testing.T) {
	t.Parallel()
	reg := prometheus.NewRegistry()
	var logs strings.Builder
	audit := domain.NewAudit(slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug})), "i-1", 1000, 1000)
	saved := &savedAt{at: time.Now().Add(-2 * time.Second).UnixMilli()}
	w := sync.NewCursorWriter(sync.CursorWriterDeps{Store: &memCursors{m: map[store.CursorKey]domain.Cursor{}},
		Window: time.Hour, Saved: saved, Audit: audit, Registry: reg, Log: quiet})
	phone := sync.AckSource{PlatformID: 2, ConnID: "conn-7"}
	const conv = "si_alice_bob"

	w.Advance("bob", conv, 5, 0, phone)
	if err := w.Flush(bg); err != nil {
		t.Fatal(err)
	}
	n, sum := histogram(t, reg, "nexo_saved_to_delivered_seconds")
	if n != 1 || sum < 1.9 || sum > 60 {
		t.Fatalf("saved → delivered: %d samples, sum %.3f s; want 1 of about 2 s", n, sum)
	}
	if n, _ := histogram(t, reg, "nexo_delivered_to_read_seconds"); n != 0 {
		t.Fatalf("delivered → read observed %d times before any read", n)
	}

	w.Advance("bob", conv, 0, 5, sync.AckSource{PlatformID: 5})
	if err := w.Flush(bg); err != nil {
		t.Fatal(err)
	}
	if n, sum := histogram(t, reg, "nexo_delivered_to_read_seconds"); n != 1 || sum < 0 || sum > 60 {
		t.Fatalf("delivered → read: %d samples, sum %.3f", n, sum)
	}
	if n, _ := histogram(t, reg, "nexo_saved_to_delivered_seconds"); n != 1 {
		t.Fatalf("a read that did not move delivered observed saved → delivered (%d samples)", n)
	}

	// carol: delivered 3, then 6, then reads 3: the remembered advance
	// (3 → 6) does not cover seq 3, so nothing is observed.
	for _, d := range []int64{3, 6} {
		w.Advance("carol", conv, d, 0, phone)
		if err := w.Flush(bg); err != nil {
			t.Fatal(err)
		}
	}
	w.Advance("carol", conv, 0, 3, phone)
	if err := w.Flush(bg); err != nil {
		t.Fatal(err)
	}
	if n, _ := histogram(t, reg, "nexo_delivered_to_read_seconds"); n != 1 {
		t.Fatalf("a read below the remembered delivered advance was observed (%d samples)", n)
	}
	if saved.lookups != 5 {
		t.Fatalf("%d saved-time lookups for 5 flushes that moved cursors", saved.lookups)
	}

	var lines []map[string]any
	for _, l := range strings.Split(strings.TrimSpace(logs.String()), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("line %q: %v", l, err)
		}
		lines = append(lines, m)
	}
	if len(lines) != 5 {
		t.Fatalf("want 5 cursor lines, got %d:\n%s", len(lines), logs.String())
	}
	want := []map[string]any{
		{"ack_type": "delivered", "user_id": "bob", "platform_id": 2.0, "conn_id": "conn-7", "seq": 5.0, "cursor_before": 0.0, "cursor_after": 5.0, "server_msg_id": conv + "#5"},
		{"ack_type": "read", "user_id": "bob", "platform_id": 5.0, "conn_id": "", "seq": 5.0, "cursor_before": 0.0, "cursor_after": 5.0, "server_msg_id": conv + "#5"},
		{"ack_type": "delivered", "user_id": "carol", "seq": 3.0, "cursor_before": 0.0, "cursor_after": 3.0},
		{"ack_type": "delivered", "user_id": "carol", "seq": 6.0, "cursor_before": 3.0, "cursor_after": 6.0, "server_msg_id": conv + "#6"},
		{"ack_type": "read", "user_id": "carol", "seq": 3.0, "cursor_before": 0.0, "cursor_after": 3.0},
	}
	for i, l := range lines {
		for k, v := range map[string]any{"msg": "audit", "point": "cursor", "result": "ok", "level": "DEBUG", "instance_id": "i-1", "conversation_id": conv} {
			want[i][k] = v
		}
		for k, v := range want[i] {
			if l[k] != v {
				t.Errorf("line %d: %s = %v, want %v (%v)", i, k, l[k], v, l)
			}
		}
	}
}

// TestCursorFlushFailureAudited: a flush the database refuses writes a warn
// cursor line per member with its connection and the seq it ACKed; the
// advance stays pending.
func TestCursorFlushFailureAudited(t *testing.T) {
	t.Parallel()
	var logs strings.Builder
	audit := domain.NewAudit(slog.New(slog.NewJSONHandler(&logs, nil)), "i-2", 1000, 1000)
	w := sync.NewCursorWriter(sync.CursorWriterDeps{Store: &flakyStore{fail: true}, Window: time.Hour, Audit: audit, Log: quiet})
	w.Advance("bob", "si_alice_bob", 4, 0, sync.AckSource{PlatformID: 3, ConnID: "conn-1"})
	if err := w.Flush(bg); err == nil {
		t.Fatal("flush did not fail")
	}
	var l map[string]any
	if err := json.Unmarshal([]byte(logs.String()), &l); err != nil {
		t.Fatalf("line %q: %v", logs.String(), err)
	}
	for k, v := range map[string]any{"level": "WARN", "point": "cursor", "result": "failed", "err": errStop.Error(), "user_id": "bob",
		"platform_id": 3.0, "conn_id": "conn-1", "conversation_id": "si_alice_bob", "seq": 4.0, "instance_id": "i-2"} {
		if l[k] != v {
			t.Errorf("%s = %v, want %v (line %v)", k, l[k], v, l)
		}
	}
}
