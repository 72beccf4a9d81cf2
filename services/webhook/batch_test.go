package webhook

import (
	"context"
	"crypto/hmac"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/nexo-im/nexo/configs"
	"github.com/nexo-im/nexo/domain"
	"github.com/nexo-im/nexo/store/storetest"
	"github.com/nexo-im/nexo/streams"
)

// TestBatchesGroupByURLInStreamOrder: a request carries at most
// batch_size entries, all for one URL, in stream order; an event disabled
// since its append gets a batch with no URL (acknowledged unsent).
func TestBatchesGroupByURLInStreamOrder(t *testing.T) {
	d := &Deliverer{cfg: configs.Webhooks{URL: "http://app/hooks", BatchSize: 2,
		Events:     []string{configs.EventAfterSend, configs.EventUserOnline},
		UserOnline: configs.WebhookEvent{URL: "http://app/presence"}}}
	entry := func(id, event string) redis.XMessage {
		return redis.XMessage{ID: id, Values: map[string]any{"event": event}}
	}
	got := d.batches([]redis.XMessage{
		entry("1-0", "after_send"), entry("2-0", "user_online"), entry("3-0", "after_send"),
		entry("4-0", "group_changed"), entry("5-0", "after_send"), entry("6-0", "user_online"),
	})
	var shape []string
	for _, b := range got {
		s := b.url + ":"
		for _, x := range b.entries {
			s += " " + x.ID
		}
		shape = append(shape, s)
	}
	want := []string{"http://app/hooks: 1-0 3-0", "http://app/presence: 2-0 6-0", ": 4-0", "http://app/hooks: 5-0"}
	if fmt.Sprint(shape) != fmt.Sprint(want) {
		t.Fatalf("batches %q, want %q", shape, want)
	}
}

// TestBatchedDeliveryIsSignedAndAtLeastOnce: with batch_size 8, twenty
// events appended before the consumer starts go out as {"events": [...]}
// requests of at most 8 (X-Nexo-Event "batch", signed over the whole
// body); a batch the receiver refuses is retried whole, and every event
// arrives with its own id and body.
func TestBatchedDeliveryIsSignedAndAtLeastOnce(t *testing.T) {
	rdb, prefix := storetest.Redis(t)
	const secret = "batch-secret-0123456789"
	var mu sync.Mutex
	var sizes []int
	okIDs := map[string]int{}
	refused := false
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		ts, _ := strconv.ParseInt(req.Header.Get(HeaderTimestamp), 10, 64)
		if !hmac.Equal([]byte(Sign([]byte(secret), ts, body)), []byte(req.Header.Get(HeaderSignature))) {
			t.Errorf("bad signature")
		}
		var b struct {
			Events []EventJSON `json:"events"`
		}
		if req.Header.Get(HeaderEvent) != configs.EventBatch || json.Unmarshal(body, &b) != nil || len(b.Events) == 0 {
			t.Errorf("%s request with body %s, want a batch", req.Header.Get(HeaderEvent), body)
		}
		mu.Lock()
		defer mu.Unlock()
		sizes = append(sizes, len(b.Events))
		if !refused { // the first request fails: its events come again
			refused = true
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		for _, ev := range b.Events {
			if data, _ := ev.Data.(map[string]any); ev.Event != configs.EventAfterSend || ev.ID != "after_send:"+fmt.Sprint(data["server_msg_id"]) {
				t.Errorf("event %+v", ev)
			}
			okIDs[ev.ID]++
		}
	}))
	t.Cleanup(srv.Close)

	cfg := configs.Webhooks{URL: srv.URL, Secret: secret, Events: []string{configs.EventAfterSend}, Timeout: 5 * time.Second,
		MaxAttempts: 5, RetryBackoff: 20 * time.Millisecond, RetryBackoffMax: 40 * time.Millisecond, Workers: 2, BatchSize: 8}
	keys := NewKeys(prefix)
	log := slog.New(slog.DiscardHandler)
	msgs := make([]domain.Message, 20)
	for i := range msgs {
		msgs[i] = domain.Message{ServerMsgID: fmt.Sprintf("m%02d", i), ConversationID: "si_a_b", Seq: int64(i + 1), SenderID: "a", RecvID: "b",
			SessionType: domain.SessionSingle, MsgType: domain.MsgText, Content: domain.Content{Text: "hi"}, Status: domain.StatusNormal}
	}
	ctx, cancel := context.WithCancel(context.Background())
	d := NewDeliverer(rdb, keys, "c1", cfg, NewClient(secret, nil), nil, log)
	if err := d.EnsureGroup(ctx); err != nil {
		t.Fatal(err)
	}
	apps, err := NewEmitter(rdb, keys, "", cfg, nil, log).AfterSave(ctx, msgs, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := streams.AppendAll(ctx, rdb, apps); err != nil {
		t.Fatal(err)
	}
	stopped := make(chan struct{})
	go func() { _ = d.Run(ctx); close(stopped) }()
	t.Cleanup(func() { cancel(); <-stopped })

	deadline := time.Now().Add(10 * time.Second)
	for {
		mu.Lock()
		n := len(okIDs)
		mu.Unlock()
		if n == len(msgs) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d events delivered", n, len(msgs))
		}
		time.Sleep(10 * time.Millisecond) // polling the receiver's record
	}
	mu.Lock()
	defer mu.Unlock()
	// The first read's three requests run concurrently (workers 2).
	if first := slices.Sorted(slices.Values(sizes[:3])); fmt.Sprint(first) != "[4 8 8]" {
		t.Errorf("the first read's requests carried %v events, want 8, 8 and 4", first)
	}
	for _, s := range sizes {
		if s > 8 {
			t.Errorf("a request carried %d events (batch_size 8)", s)
		}
	}
	for id, n := range okIDs {
		if n != 1 {
			t.Errorf("%s accepted %d times", id, n)
		}
	}
	waitAcked := time.Now().Add(5 * time.Second)
	for rdb.XLen(context.Background(), keys.Events).Val() != 0 {
		if time.Now().After(waitAcked) {
			t.Fatal("delivered entries are still in the stream")
		}
		time.Sleep(10 * time.Millisecond) // polling Redis for the ack
	}
}
