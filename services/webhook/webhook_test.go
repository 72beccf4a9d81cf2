package webhook

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"log/slog"
	"testing"
	"time"

	"github.com/nexo-im/nexo/configs"
	"github.com/nexo-im/nexo/domain"
	"github.com/nexo-im/nexo/store/storetest"
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

// TestAfterSaveAppendsOnlyEnabledEvents: after_send for user messages,
// group_changed for group notifications, nothing for disabled events or
// recalled messages; ids are stable per message (receivers dedupe on them).
func TestAfterSaveAppendsOnlyEnabledEvents(t *testing.T) {
	rdb, prefix := storetest.Redis(t)
	keys := NewKeys(prefix)
	cfg := configs.Webhooks{URL: "http://127.0.0.1:1/", Events: []string{configs.EventAfterSend}}
	e := NewEmitter(rdb, keys, cfg, nil, slog.New(slog.DiscardHandler))
	msgs := []domain.Message{
		{ServerMsgID: "m1", ConversationID: "si_a_b", Seq: 1, SenderID: "a", RecvID: "b", SessionType: domain.SessionSingle, MsgType: domain.MsgText, Content: domain.Content{Text: "hi"}, Status: domain.StatusNormal},
		{ServerMsgID: "m2", ConversationID: "sg_g", Seq: 1, SenderID: "a", GroupID: "g", SessionType: domain.SessionGroup, MsgType: 1501, Content: domain.Content{Custom: `{"x":1}`}, Status: domain.StatusNormal},
		{ServerMsgID: "m3", ConversationID: "si_a_b", Seq: 2, SenderID: "a", RecvID: "b", SessionType: domain.SessionSingle, MsgType: domain.MsgText, Status: domain.StatusRevoked},
	}
	ctx := context.Background()
	if err := e.AfterSave(ctx, msgs, []bool{true, true, true}); err != nil {
		t.Fatal(err)
	}
	got, err := rdb.XRange(ctx, keys.Events, "-", "+").Result()
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].Values["event"] != "after_send" || got[0].Values["id"] != "after_send:m1" {
		t.Fatalf("stream holds %v, want only after_send:m1", got)
	}
}

// BenchmarkAfterSaveBatch is what the save stage pays per batch with
// after_send on: one pipelined XADD round trip for the batch's events
// (real Redis; docs/webhooks.md quotes it).
func BenchmarkAfterSaveBatch(b *testing.B) {
	rdb, prefix := storetest.Redis(b)
	keys := NewKeys(prefix)
	cfg := configs.Webhooks{URL: "http://127.0.0.1:1/", Events: []string{configs.EventAfterSend}}
	e := NewEmitter(rdb, keys, cfg, nil, slog.New(slog.DiscardHandler))
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
		if err := e.AfterSave(ctx, msgs, fresh); err != nil {
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
