package push

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/nexo-im/nexo/domain"
)

// TestOneNotificationPerOfflineMessage: an offline recipient gets one
// notification per single-chat message, decrypted by its browser with the
// text preview and the badge; the sender, a foreground recipient and a
// muted conversation get none.
func TestOneNotificationPerOfflineMessage(t *testing.T) {
	h := newHarness(t, testConfig())
	h.webDevice("bob", "bob")
	h.webDevice("alice", "alice")
	h.webDevice("carol", "carol")
	h.webDevice("dave", "dave")
	h.presence.foreground["carol"] = true
	h.convs.opt["dave/"+domain.SingleConversationID("alice", "dave")] = 1
	h.convs.unread["bob"] = 5
	h.start("a")
	h.save(single("alice", "bob", "hello bob"), single("alice", "bob", "are you there?"),
		single("alice", "carol", "carol is here"), single("alice", "dave", "dave muted"))
	h.drained()
	got := h.web.accepted("bob")
	if len(got) != 2 {
		t.Fatalf("bob got %d notifications, want 2: %+v", len(got), got)
	}
	bodies := map[string]bool{}
	for _, x := range got {
		n := x.n
		bodies[n.Body] = true
		if n.Kind != KindMessage || n.Title != "Alice" || n.Badge != 5 || n.SenderID != "alice" || n.UserID != "bob" ||
			n.ConversationID != domain.SingleConversationID("alice", "bob") {
			t.Errorf("notification %+v", n)
		}
	}
	if !bodies["hello bob"] || !bodies["are you there?"] {
		t.Errorf("bodies %v", bodies)
	}
	for _, u := range []string{"alice", "carol", "dave"} {
		if n := len(h.web.all(u)); n != 0 {
			t.Errorf("%s got %d notifications, want none", u, n)
		}
	}
}

// TestGroupWindowCollapsesAndMutes: three group messages within
// push.group_window notify each offline member once; a member with
// recv_msg_opt 1 and the sender get none, a member who set the group to
// mentions-only gets only the message mentioning them; a recall is a
// silent update.
func TestGroupWindowCollapsesAndMutes(t *testing.T) {
	h := newHarness(t, testConfig())
	h.members["g1"] = map[string]int{"alice": 0, "bob": 0, "erin": 1, "frank": 0, "gina": 0}
	h.webDevice("bob", "bob")
	h.webDevice("gina", "gina")
	if _, err := h.svc.SetSettings(context.Background(), "gina", SettingsRequest{ConversationID: "sg_g1", MentionsOnly: true}); err != nil {
		t.Fatal(err)
	}
	h.webDevice("erin", "erin")
	h.webDevice("alice", "alice")
	h.tokenDevice("frank", ProviderAPNs, "aabbccdd00112233")
	h.convs.unread["frank"] = 3
	h.start("a")
	h.save(groupMsg("alice", "g1", "one"), groupMsg("alice", "g1", "two", "frank", "gina"), groupMsg("alice", "g1", "three"))
	h.drained()
	if got := h.web.accepted("bob"); len(got) != 1 || got[0].n.Body != "one" {
		t.Fatalf("bob: %+v, want one notification for the window", got)
	}
	if got := h.web.accepted("gina"); len(got) != 1 || got[0].n.Body != "two" || !got[0].n.Mentioned {
		t.Fatalf("gina (mentions only): %+v, want the mentioning message only", got)
	}
	if n := len(h.web.all("erin")) + len(h.web.all("alice")); n != 0 {
		t.Fatalf("muted member and sender got %d notifications", n)
	}
	frank := h.apns.accepted("aabbccdd00112233")
	if len(frank) != 1 {
		t.Fatalf("frank (APNs) got %d, want 1", len(frank))
	}
	aps := frank[0].raw["aps"].(map[string]any)
	alert := aps["alert"].(map[string]any)
	if aps["badge"] != float64(3) || alert["title"] != "Alice" || alert["body"] != "one" || frank[0].raw["_push_type"] != "alert" ||
		frank[0].raw["_collapse_id"] == "" {
		t.Errorf("APNs request %+v", frank[0].raw)
	}
	// A recall announces through the pipeline: a silent update, never
	// collapsed by the window.
	h.save(domain.Message{ConversationID: "sg_g1", SenderID: "alice", GroupID: "g1", SessionType: domain.SessionGroup,
		ClientMsgID: "sys:revoke:sg_g1#1", MsgType: 2101, Content: domain.Content{Custom: `{"server_msg_id":"sg_g1#1","seq":1}`}})
	h.drained()
	frank = h.apns.accepted("aabbccdd00112233")
	if len(frank) != 2 {
		t.Fatalf("frank got %d after the recall, want 2", len(frank))
	}
	aps = frank[1].raw["aps"].(map[string]any)
	if aps["content-available"] != float64(1) || aps["alert"] != nil || frank[1].raw["_push_type"] != "background" ||
		frank[1].raw["kind"] != KindRecall || frank[1].raw["server_msg_id"] != "sg_g1#1" {
		t.Errorf("recall APNs request %+v", frank[1].raw)
	}
	if got := h.web.accepted("bob"); len(got) != 2 || got[1].n.Kind != KindRecall || got[1].n.Body != "" {
		t.Errorf("bob's recall: %+v", got)
	}
}

// TestFCMSendsWithServiceAccountToken: an FCM device gets a v1 message
// with the OAuth token of the service account, the notification and the
// badge; UNREGISTERED forgets the device.
func TestFCMSendsAndForgetsUnregistered(t *testing.T) {
	h := newHarness(t, testConfig())
	h.tokenDevice("bob", ProviderFCM, "fcm-token-bob")
	gone := h.tokenDevice("carol", ProviderFCM, "fcm-token-carol")
	h.convs.unread["bob"] = 2
	h.fcm.on("fcm-token-carol", answer{status: 404, body: fcmUnregistered})
	h.start("a")
	h.save(single("alice", "bob", "hi"), single("alice", "carol", "hi carol"))
	h.drained()
	got := h.fcm.accepted("fcm-token-bob")
	if len(got) != 1 {
		t.Fatalf("bob got %d FCM messages, want 1", len(got))
	}
	m := got[0].raw
	notif, _ := m["notification"].(map[string]any)
	data, _ := m["data"].(map[string]any)
	if notif["title"] != "Alice" || notif["body"] != "hi" || data["badge"] != "2" || data["kind"] != KindMessage {
		t.Errorf("FCM message %+v", m)
	}
	devs, _ := h.svc.List(context.Background(), "carol")
	for _, d := range devs.Devices {
		if d.DeviceID == gone.DeviceID {
			t.Fatalf("carol's unregistered FCM token is still registered")
		}
	}
	if len(h.fcm.all("fcm-token-carol")) != 1 {
		t.Errorf("the gone token was tried %d times, want 1", len(h.fcm.all("fcm-token-carol")))
	}
}

// TestGoneAnswersForgetDevices: Web Push 410 and 404 and APNs 410 forget
// the device.
func TestGoneAnswersForgetDevices(t *testing.T) {
	h := newHarness(t, testConfig())
	h.webDevice("bob", "bob410")
	h.webDevice("bob", "bob404")
	h.tokenDevice("bob", ProviderAPNs, "0011")
	h.web.on("bob410", answer{status: 410})
	h.web.on("bob404", answer{status: 404})
	h.apns.on("0011", answer{status: 410, body: `{"reason":"Unregistered","timestamp":1}`})
	h.start("a")
	h.save(single("alice", "bob", "hi"))
	h.drained()
	devs, err := h.svc.List(context.Background(), "bob")
	if err != nil {
		t.Fatal(err)
	}
	if len(devs.Devices) != 0 {
		t.Fatalf("bob still has %d devices after gone answers: %+v", len(devs.Devices), devs.Devices)
	}
}

// TestRetriesHonourRetryAfter: 429 with Retry-After 1 delays the next
// attempt by at least a second; a 503 is retried; the notification is
// delivered once in the end.
func TestRetriesHonourRetryAfter(t *testing.T) {
	h := newHarness(t, testConfig())
	h.webDevice("bob", "bob")
	h.tokenDevice("carol", ProviderFCM, "fcm-carol")
	h.web.on("bob", answer{status: 429, retryAfter: "1"})
	h.fcm.on("fcm-carol", answer{status: 503}, answer{status: 500})
	h.start("a")
	h.save(single("alice", "bob", "slow"), single("alice", "carol", "flaky"))
	h.drained()
	all := h.web.all("bob")
	if len(all) != 2 || all[0].status != 429 || all[1].status != 201 {
		t.Fatalf("bob's attempts: %+v", all)
	}
	if gap := all[1].at.Sub(all[0].at); gap < time.Second {
		t.Fatalf("retried after %v, before Retry-After 1s", gap)
	}
	if n := len(h.fcm.accepted("fcm-carol")); n != 1 || len(h.fcm.all("fcm-carol")) != 3 {
		t.Fatalf("carol: %d accepted of %d attempts, want 1 of 3", n, len(h.fcm.all("fcm-carol")))
	}
}

// TestDeadLetterAfterMaxAttempts: a provider that keeps failing sends the
// job to the dead-letter stream after push.max_attempts.
func TestDeadLetterAfterMaxAttempts(t *testing.T) {
	h := newHarness(t, testConfig())
	h.webDevice("bob", "bob")
	for range 10 {
		h.web.on("bob", answer{status: 500})
	}
	h.start("a")
	h.save(single("alice", "bob", "doomed"))
	h.drained()
	if n := len(h.web.all("bob")); n != h.cfg.MaxAttempts {
		t.Errorf("%d attempts, want push.max_attempts %d", n, h.cfg.MaxAttempts)
	}
	if n := h.rdb.XLen(context.Background(), h.keys.Dead).Val(); n != 1 {
		t.Fatalf("dead-letter stream holds %d entries, want 1", n)
	}
}

// TestNothingLostWhenAnInstanceDies: entries an instance read and never
// acknowledged (killed mid-batch) are taken over by another instance and
// sent — in both stages.
func TestNothingLostWhenAnInstanceDies(t *testing.T) {
	h := newHarness(t, testConfig())
	h.webDevice("bob", "bob")
	ctx := context.Background()
	for _, g := range []struct{ stream, group string }{{h.keys.Saved, ResolveGroup}, {h.keys.Send(ProviderWebPush), SendGroup}} {
		if err := h.rdb.XGroupCreateMkStream(ctx, g.stream, g.group, "0").Err(); err != nil {
			t.Fatal(err)
		}
	}
	// The dead instance took a saved message and a job in its reads,
	// then died before finishing them.
	h.save(single("alice", "bob", "taken by the dead"))
	devs, err := h.repo.OfUsers(ctx, []string{"bob"})
	if err != nil || len(devs["bob"]) != 1 {
		t.Fatalf("bob's devices %v %v", devs, err)
	}
	d := devs["bob"][0]
	b, _ := json.Marshal(job{Device: deviceRef{ID: d.ID, Provider: d.Provider, Token: d.Token, P256dh: d.P256dh, Auth: d.Auth},
		N: Notification{Kind: KindMessage, UserID: "bob", ConversationID: "si_alice_bob", Title: "Alice", Body: "job of the dead"}})
	h.rdb.XAdd(ctx, &redis.XAddArgs{Stream: h.keys.Send(ProviderWebPush), Values: []any{jobField, b}})
	for _, g := range []struct{ stream, group string }{{h.keys.Saved, ResolveGroup}, {h.keys.Send(ProviderWebPush), SendGroup}} {
		res, err := h.rdb.XReadGroup(ctx, &redis.XReadGroupArgs{Group: g.group, Consumer: "dead", Streams: []string{g.stream, ">"}, Block: -1}).Result()
		if err != nil || len(res) != 1 || len(res[0].Messages) != 1 {
			t.Fatalf("dead read of %s: %v %v", g.stream, res, err)
		}
	}
	h.start("survivor")
	h.drained()
	bodies := map[string]int{}
	for _, x := range h.web.accepted("bob") {
		bodies[x.n.Body]++
	}
	if bodies["taken by the dead"] != 1 || bodies["job of the dead"] != 1 {
		t.Fatalf("delivered %v, want each message once", bodies)
	}
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond) // polling with a deadline, not synchronising
	}
}
