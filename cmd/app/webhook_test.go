package app

import (
	"crypto/hmac"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nexo-im/nexo/configs"
	"github.com/nexo-im/nexo/services/webhook"
)

const hookSecret = "webhook-secret-0123456789"

// hookEvent is one request the test receiver got.
type hookEvent struct {
	Event, ID string
	Body      map[string]any
	OK        bool // answered 2xx
}

// receiver is the test's app backend: it checks every signature, records
// every call and answers as the test says.
type receiver struct {
	t      *testing.T
	srv    *httptest.Server
	mu     sync.Mutex
	events []hookEvent
	tries  map[string]int
	// failFirst makes the first n attempts of every async event fail (500).
	failFirst int
	// failAll fails every async event.
	failAll bool
	changed chan struct{}
}

func newReceiver(t *testing.T) *receiver {
	r := &receiver{t: t, tries: map[string]int{}, changed: make(chan struct{}, 1)}
	r.srv = httptest.NewServer(http.HandlerFunc(r.serve))
	t.Cleanup(r.srv.Close)
	return r
}

func (r *receiver) serve(w http.ResponseWriter, req *http.Request) {
	body, _ := io.ReadAll(req.Body)
	ts, _ := strconv.ParseInt(req.Header.Get(webhook.HeaderTimestamp), 10, 64)
	want := webhook.Sign([]byte(hookSecret), ts, body)
	if !hmac.Equal([]byte(want), []byte(req.Header.Get(webhook.HeaderSignature))) || time.Since(time.Unix(ts, 0)) > 5*time.Minute {
		r.t.Errorf("bad signature on %s", req.Header.Get(webhook.HeaderEvent))
		w.WriteHeader(401)
		return
	}
	var m map[string]any
	_ = json.Unmarshal(body, &m)
	ev := hookEvent{Event: req.Header.Get(webhook.HeaderEvent), ID: req.Header.Get(webhook.HeaderDelivery), Body: m}
	answer := ""
	status := 200
	if ev.Event == configs.EventBeforeSend {
		msg, _ := m["message"].(map[string]any)
		content, _ := msg["content"].(map[string]any)
		text := fmt.Sprint(content["text"])
		switch {
		case strings.Contains(text, "forbidden word"):
			answer = `{"action":"reject","reason":"no forbidden words here"}`
		case strings.Contains(text, "rewrite me"):
			answer = `{"action":"replace","content":{"text":"rewritten by the app"}}`
		case strings.Contains(text, "slow"):
			<-req.Context().Done() // until Nexo gives up
			return
		}
	} else {
		r.mu.Lock()
		r.tries[ev.ID]++
		if r.failAll || r.tries[ev.ID] <= r.failFirst {
			status = 500
		}
		r.mu.Unlock()
	}
	ev.OK = status == 200
	r.mu.Lock()
	r.events = append(r.events, ev)
	r.mu.Unlock()
	select {
	case r.changed <- struct{}{}:
	default:
	}
	w.WriteHeader(status)
	_, _ = w.Write([]byte(answer))
}

// wait polls until cond holds over the events received (10 s deadline).
func (r *receiver) wait(what string, cond func([]hookEvent) bool) []hookEvent {
	r.t.Helper()
	deadline := time.After(10 * time.Second)
	for {
		r.mu.Lock()
		got := append([]hookEvent(nil), r.events...)
		r.mu.Unlock()
		if cond(got) {
			return got
		}
		select {
		case <-r.changed:
		case <-deadline:
			r.t.Fatalf("timed out waiting for %s; got %d events: %+v", what, len(got), got)
		}
	}
}

func (r *receiver) set(failFirst int, failAll bool) {
	r.mu.Lock()
	r.failFirst, r.failAll = failFirst, failAll
	r.mu.Unlock()
}

func hookConfig(t *testing.T, r *receiver, events ...string) configs.Config {
	cfg := apiConfig(t)
	cfg.Webhooks.URL = r.srv.URL
	cfg.Webhooks.Secret = hookSecret
	cfg.Webhooks.Events = events
	cfg.Webhooks.RetryBackoff = 50 * time.Millisecond
	cfg.Webhooks.RetryBackoffMax = 200 * time.Millisecond
	cfg.Webhooks.OfflinePush.BatchWait = 20 * time.Millisecond
	cfg.Webhooks.Workers = 1
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	return cfg
}

func textOf(f frame) string {
	c, _ := f.field("content").(map[string]any)
	return fmt.Sprint(c["text"])
}

// TestBeforeSendRejectsAndRewrites: the app's before_send refuses one
// message with its reason and replaces another's content.
func TestBeforeSendRejectsAndRewrites(t *testing.T) {
	t.Parallel()
	r := newReceiver(t)
	base, _, _ := startApp(t, hookConfig(t, r, configs.EventBeforeSend))
	for _, u := range []string{"amy", "ben"} {
		mustAPI(t, "POST", base+"/api/user/create", fmt.Sprintf(`{"user_id":%q,"nickname":%q}`, u, u))
	}
	amy := dial(t, base, "amy", fmt.Sprint(mustAPI(t, "POST", base+"/api/token", `{"user_id":"amy","platform_id":5}`)["token"]))
	ben := dial(t, base, "ben", fmt.Sprint(mustAPI(t, "POST", base+"/api/token", `{"user_id":"ben","platform_id":5}`)["token"]))

	rej := amy.send("ben", "c1", "a forbidden word")
	if rej.ErrMsg != "message_rejected" || !strings.Contains(string(rej.Data), "no forbidden words here") {
		t.Fatalf("rejected send: %+v %s", rej, rej.Data)
	}
	if ok := amy.send("ben", "c2", "please rewrite me"); ok.ErrCode != 0 {
		t.Fatalf("rewritten send: %+v %s", ok, ok.Data)
	}
	got := ben.waitPushes(2001, "the rewritten message", func(f []frame) bool { return len(f) >= 1 })
	if len(got) != 1 || textOf(got[0]) != "rewritten by the app" {
		t.Fatalf("ben got %s", got[0].Data)
	}
}

// TestBeforeSendTimeoutObeysOnError: a receiver that never answers lets
// the message through with on_error allow and refuses it with reject.
func TestBeforeSendTimeoutObeysOnError(t *testing.T) {
	t.Parallel()
	for _, onError := range []string{configs.OnErrorAllow, configs.OnErrorReject} {
		t.Run(onError, func(t *testing.T) {
			t.Parallel()
			r := newReceiver(t)
			cfg := hookConfig(t, r, configs.EventBeforeSend)
			cfg.Webhooks.BeforeSend.Timeout = 200 * time.Millisecond
			cfg.Webhooks.BeforeSend.OnError = onError
			base, _, _ := startApp(t, cfg)
			mustAPI(t, "POST", base+"/api/user/create", `{"user_id":"cat","nickname":"cat"}`)
			mustAPI(t, "POST", base+"/api/user/create", `{"user_id":"dan","nickname":"dan"}`)
			ack := mustAPIStatus(t, base, `{"send_id":"cat","session_type":1,"recv_id":"dan","msg_type":101,"content":{"text":"slow check"}}`)
			switch onError {
			case configs.OnErrorAllow:
				if ack["err_code"] != 0.0 {
					t.Fatalf("on_error allow: %v", ack)
				}
			case configs.OnErrorReject:
				if ack["err_msg"] != "message_rejected" {
					t.Fatalf("on_error reject: %v", ack)
				}
			}
		})
	}
}

func mustAPIStatus(t *testing.T, base, body string) map[string]any {
	t.Helper()
	_, env := serverAPI(t, "POST", base+"/api/msg/send", body)
	return env
}

// TestAfterSendAtLeastOnceAcrossRestart: after_send reaches a receiver that
// fails twice, and an event appended before a restart is delivered by the
// restarted process.
func TestAfterSendAtLeastOnceAcrossRestart(t *testing.T) {
	t.Parallel()
	r := newReceiver(t)
	r.set(2, false)
	cfg := hookConfig(t, r, configs.EventAfterSend)
	base, _, stop := startApp(t, cfg)
	mustAPI(t, "POST", base+"/api/user/create", `{"user_id":"eve","nickname":"eve"}`)
	mustAPI(t, "POST", base+"/api/user/create", `{"user_id":"fay","nickname":"fay"}`)
	send := func(base, text string) string {
		ack := mustAPI(t, "POST", base+"/api/msg/send", fmt.Sprintf(`{"send_id":"eve","session_type":1,"recv_id":"fay","msg_type":101,"content":{"text":%q}}`, text))
		return fmt.Sprint(ack["server_msg_id"])
	}
	first := send(base, "one")
	got := r.wait("after_send delivered after two failures", func(ev []hookEvent) bool {
		for _, e := range ev {
			if e.ID == "after_send:"+first && e.OK {
				return true
			}
		}
		return false
	})
	tries := 0
	for _, e := range got {
		if e.ID == "after_send:"+first {
			tries++
			data, _ := e.Body["data"].(map[string]any)
			if e.Body["event"] != "after_send" || data["server_msg_id"] != first || data["seq"] != 1.0 {
				t.Fatalf("after_send body: %v", e.Body)
			}
		}
	}
	if tries != 3 {
		t.Fatalf("delivered after %d attempts, want 3 (two failures)", tries)
	}

	// The receiver is down; a message is saved; Nexo restarts; the
	// receiver comes back: the event is delivered by the new process.
	r.set(0, true)
	second := send(base, "two")
	r.wait("a failed attempt of the second event", func(ev []hookEvent) bool {
		for _, e := range ev {
			if e.ID == "after_send:"+second {
				return true
			}
		}
		return false
	})
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	r.set(0, false)
	startApp(t, cfg)
	r.wait("the second event delivered after the restart", func(ev []hookEvent) bool {
		for _, e := range ev {
			if e.ID == "after_send:"+second && e.OK {
				return true
			}
		}
		return false
	})
}

// TestOfflinePushOnlyForOfflineRecipients: offline_push fires for an
// offline recipient (and one whose only connection is backgrounded), not
// for an online one; user_online and group_changed are sent too.
func TestOfflinePushOnlyForOfflineRecipients(t *testing.T) {
	t.Parallel()
	r := newReceiver(t)
	base, _, _ := startApp(t, hookConfig(t, r, configs.EventOfflinePush, configs.EventUserOnline, configs.EventGroupChanged))
	for _, u := range []string{"gus", "hal", "ida"} {
		mustAPI(t, "POST", base+"/api/user/create", fmt.Sprintf(`{"user_id":%q,"nickname":"Nick %s"}`, u, u))
	}
	tok := func(u string) string {
		return fmt.Sprint(mustAPI(t, "POST", base+"/api/token", fmt.Sprintf(`{"user_id":%q,"platform_id":5}`, u))["token"])
	}
	gus := dial(t, base, "gus", tok("gus"))
	ida := dial(t, base, "ida", tok("ida"))
	r.wait("user_online of gus and ida", func(ev []hookEvent) bool {
		n := 0
		for _, e := range ev {
			if e.Event == "user_online" {
				n++
			}
		}
		return n >= 2
	})

	// ida is online: the message is pushed to her, not to the push service.
	if a := gus.send("ida", "m1", "hello ida"); a.ErrCode != 0 {
		t.Fatalf("send: %+v", a)
	}
	ida.waitPushes(2001, "message", func(f []frame) bool { return len(f) >= 1 })
	// hal is offline: offline_push with preview, unread count and sender.
	if a := gus.send("hal", "m2", "hello hal"); a.ErrCode != 0 {
		t.Fatalf("send: %+v", a)
	}
	got := r.wait("offline_push for hal", func(ev []hookEvent) bool {
		for _, e := range ev {
			if e.Event == "offline_push" && e.OK {
				return true
			}
		}
		return false
	})
	var pushes []map[string]any
	for _, e := range got {
		if e.Event == "offline_push" {
			pushes = append(pushes, e.Body["data"].(map[string]any))
		}
	}
	if len(pushes) != 1 || pushes[0]["user_id"] != "hal" {
		t.Fatalf("offline pushes %v: only hal is offline", pushes)
	}
	conv := pushes[0]["conversations"].([]any)[0].(map[string]any)
	if conv["preview"] != "hello hal" || conv["sender_id"] != "gus" || conv["sender_nickname"] != "Nick gus" ||
		conv["unread_count"] != 1.0 || conv["mentioned"] != false {
		t.Fatalf("offline push conversation: %v", conv)
	}

	// ida goes to the background: she now gets offline pushes too.
	if a := ida.request(1104, map[string]any{"background": true}); a.ErrCode != 0 {
		t.Fatalf("app state: %+v", a)
	}
	if a := gus.send("ida", "m3", "are you there"); a.ErrCode != 0 {
		t.Fatalf("send: %+v", a)
	}
	r.wait("offline_push for backgrounded ida", func(ev []hookEvent) bool {
		for _, e := range ev {
			if d, _ := e.Body["data"].(map[string]any); e.Event == "offline_push" && d["user_id"] == "ida" {
				return true
			}
		}
		return false
	})

	mustAPI(t, "POST", base+"/api/group/create", `{"op_user_id":"gus","name":"g","member_ids":["hal","ida"]}`)
	r.wait("group_changed", func(ev []hookEvent) bool {
		for _, e := range ev {
			if d, _ := e.Body["data"].(map[string]any); e.Event == "group_changed" && d["op_user_id"] == "gus" {
				return true
			}
		}
		return false
	})
}
