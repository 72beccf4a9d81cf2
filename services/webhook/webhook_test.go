package webhook

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/nexo-im/nexo/configs"
	"github.com/nexo-im/nexo/domain"
	"github.com/nexo-im/nexo/store/storetest"
	"github.com/nexo-im/nexo/streams"
)

// TestSignIsTheDocumentedHMAC: docs/webhooks.md tells receivers to compute
// hex(HMAC-SHA256(secret, "<ts>.<body>")); Sign must be exactly that.
func TestSignIsTheDocumentedHMAC(t *testing.T) {
	secret, body := []byte("s3cret-s3cret-s3cret"), []byte(`{"event":"after_send"}`)
	mac := hmac.New(sha256.New, secret)
	mac.Write([]byte("1795000000." + string(body)))
	if got, want := Sign(secret, 1795000000, body), "sha256="+hex.EncodeToString(mac.Sum(nil)); got != want {
		t.Fatalf("Sign = %s, want %s", got, want)
	}
	if Sign(secret, 1795000001, body) == Sign(secret, 1795000000, body) {
		t.Fatal("the timestamp is not signed")
	}
}

// TestRefusedEventIsDeadLettered: an event the receiver keeps refusing is
// tried webhooks.max_attempts times, then moved to the dead-letter stream
// with its event, id, body (cut to dead_max_body_bytes), attempts and the
// receiver's error, deleted from the event stream and counted.
func TestRefusedEventIsDeadLettered(t *testing.T) {
	rdb, prefix := storetest.Redis(t)
	var mu sync.Mutex
	tries := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		mu.Lock()
		tries++
		mu.Unlock()
		w.WriteHeader(http.StatusBadGateway)
	}))
	t.Cleanup(srv.Close)
	cfg := configs.Webhooks{URL: srv.URL, Secret: "dead-secret-0123456789", Events: []string{configs.EventUserOnline}, Timeout: time.Second,
		MaxAttempts: 2, RetryBackoff: 20 * time.Millisecond, RetryBackoffMax: 40 * time.Millisecond, Workers: 1, BatchSize: 1,
		DeadMaxLen: 10, DeadMaxBodyBytes: 64}
	keys := NewKeys(prefix)
	log := slog.New(slog.DiscardHandler)
	reg := prometheus.NewRegistry()
	d := NewDeliverer(rdb, keys, "c1", cfg, NewClient(cfg.Secret, nil), reg, log)
	ctx, cancel := context.WithCancel(context.Background())
	stopped := make(chan struct{})
	go func() { _ = d.Run(ctx); close(stopped) }()
	t.Cleanup(func() { cancel(); <-stopped })
	if err := NewEmitter(rdb, keys, "", cfg, nil, log).Emit(ctx, configs.EventUserOnline, UserEventJSON{UserID: strings.Repeat("u", 100), PlatformID: 1}); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for rdb.XLen(ctx, keys.Dead).Val() == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the refused event was not dead-lettered")
		}
		time.Sleep(10 * time.Millisecond) // polling Redis with a deadline, not synchronising
	}
	dead := rdb.XRange(ctx, keys.Dead, "-", "+").Val()[0].Values
	body, _ := dead["body"].(string)
	if dead["event"] != configs.EventUserOnline || dead["id"] == "" || len(body) != 64 || dead["body_bytes"] == nil ||
		dead["attempts"] != "2" || !strings.Contains(fmt.Sprint(dead["err"]), "502") {
		t.Fatalf("dead letter %v", dead)
	}
	mu.Lock()
	n := tries
	mu.Unlock()
	if n != 2 {
		t.Errorf("%d attempts, want max_attempts 2", n)
	}
	// The entry's deletion and the metric follow the dead letter's commit.
	for rdb.XLen(ctx, keys.Events).Val() != 0 || testutil.ToFloat64(d.m.dead.WithLabelValues(configs.EventUserOnline)) != 1 {
		if time.Now().After(deadline) {
			t.Fatalf("the event stream holds %d entries, nexo_webhook_dead_lettered_total = %v; want 0 and 1",
				rdb.XLen(ctx, keys.Events).Val(), testutil.ToFloat64(d.m.dead.WithLabelValues(configs.EventUserOnline)))
		}
		time.Sleep(10 * time.Millisecond) // polling with a deadline, not synchronising
	}
}

// TestAfterSaveAppendsOnlyEnabledEvents: after_send for user messages,
// group_changed for group notifications, nothing for disabled events or
// recalled messages; ids are stable per message (receivers dedupe on them).
func TestAfterSaveAppendsOnlyEnabledEvents(t *testing.T) {
	rdb, prefix := storetest.Redis(t)
	keys := NewKeys(prefix)
	cfg := configs.Webhooks{URL: "http://127.0.0.1:1/", Events: []string{configs.EventAfterSend}}
	e := NewEmitter(rdb, keys, "web1-8080", cfg, nil, slog.New(slog.DiscardHandler))
	msgs := []domain.Message{
		{ServerMsgID: "m1", ConversationID: "si_a_b", Seq: 1, SenderID: "a", RecvID: "b", SessionType: domain.SessionSingle, MsgType: domain.MsgText, Content: domain.Content{Text: "hi"}, Status: domain.StatusNormal},
		{ServerMsgID: "m2", ConversationID: "sg_g", Seq: 1, SenderID: "a", GroupID: "g", SessionType: domain.SessionGroup, MsgType: 1501, Content: domain.Content{Custom: `{"x":1}`}, Status: domain.StatusNormal},
		{ServerMsgID: "m3", ConversationID: "si_a_b", Seq: 2, SenderID: "a", RecvID: "b", SessionType: domain.SessionSingle, MsgType: domain.MsgText, Status: domain.StatusRevoked},
	}
	ctx := context.Background()
	apps, err := e.AfterSave(ctx, msgs, []bool{true, true, true})
	if err != nil {
		t.Fatal(err)
	}
	if err := streams.AppendAll(ctx, rdb, apps); err != nil {
		t.Fatal(err)
	}
	got, err := rdb.XRange(ctx, keys.Events, "-", "+").Result()
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].Values["event"] != "after_send" || got[0].Values["id"] != "after_send:m1" ||
		got[0].Values["instance_id"] != "web1-8080" {
		t.Fatalf("stream holds %v, want only after_send:m1 from instance web1-8080", got)
	}
}

// BenchmarkAfterSaveBatch is what a batch pays with after_send on: the
// events' encoding and their XADDs, here in one pipelined round trip as on
// the synchronous path and Redis Cluster (the save stage's commit script
// carries them otherwise; real Redis; docs/webhooks.md quotes it).
func BenchmarkAfterSaveBatch(b *testing.B) {
	rdb, prefix := storetest.Redis(b)
	keys := NewKeys(prefix)
	cfg := configs.Webhooks{URL: "http://127.0.0.1:1/", Events: []string{configs.EventAfterSend}}
	e := NewEmitter(rdb, keys, "", cfg, nil, slog.New(slog.DiscardHandler))
	const batch = 256
	msgs := make([]domain.Message, batch)
	fresh := make([]bool, batch)
	for i := range msgs {
		msgs[i] = domain.Message{ServerMsgID: fmt.Sprintf("m%d", i), ConversationID: "si_a_b", Seq: int64(i + 1), SenderID: "a", RecvID: "b",
			SessionType: domain.SessionSingle, MsgType: domain.MsgText, Content: domain.Content{Text: "a 64-byte message text ....................................."},
			Status: domain.StatusNormal, SendAt: time.Now().UnixMilli()}
		fresh[i] = true
	}
	ctx := context.Background()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		apps, err := e.AfterSave(ctx, msgs, fresh)
		if err != nil {
			b.Fatal(err)
		}
		if err := streams.AppendAll(ctx, rdb, apps); err != nil {
			b.Fatal(err)
		}
		if i%16 == 15 {
			b.StopTimer()
			rdb.Del(ctx, keys.Events)
			b.StartTimer()
		}
	}
	b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N*batch), "µs/msg")
}
