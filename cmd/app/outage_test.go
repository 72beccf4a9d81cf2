package app

import (
	"context"
	"fmt"
	"testing"

	"github.com/nexo-im/nexo/domain"
	"github.com/nexo-im/nexo/store/storetest"
)

// TestRedisUnreachableAtAccept: with fail_open the send falls back to the
// synchronous path (ACK(saved), seq from the database); without it the send
// is refused with server_busy and nothing is written. When Redis returns,
// two-phase accepts resume with seqs above the fallback's, and no message
// is lost or duplicated.
func TestRedisUnreachableAtAccept(t *testing.T) {
	for _, failOpen := range []bool{true, false} {
		t.Run(fmt.Sprint("fail_open=", failOpen), func(t *testing.T) {
			t.Parallel()
			cfg := realConfig(t)
			proxy := storetest.NewProxy(t, cfg.Redis.Addr)
			cfg.Redis.Addr = proxy.Addr()
			cfg.TwoPhase.FailOpen = failOpen
			base, _, _ := startApp(t, cfg)
			a := dial(t, base, "una", user(t, base, "una"))
			user(t, base, "vic")
			if r := a.send("vic", "before", "x"); r.ErrCode != 0 || r.field("seq") != 1.0 {
				t.Fatalf("send before the outage: %+v %s", r, r.Data)
			}

			proxy.Down()
			during := a.send("vic", "during", "y")
			if failOpen {
				if during.ErrCode != 0 || during.field("ack_type") != "saved" {
					t.Fatalf("fail_open send during the outage: %+v %s", during, during.Data)
				}
			} else if during.ErrMsg != "server_busy" {
				t.Fatalf("fail_open=false send during the outage: %+v %s", during, during.Data)
			}
			proxy.Up()

			after := a.send("vic", "after", "z")
			if after.ErrCode != 0 || after.field("ack_type") != "accepted" {
				t.Fatalf("send after the outage: %+v %s", after, after.Data)
			}
			if failOpen && after.field("seq").(float64) <= during.field("seq").(float64) {
				t.Fatalf("seq after the outage %v is not above the fallback's %v", after.field("seq"), during.field("seq"))
			}
			// Every acknowledged message is saved exactly once.
			conv := domain.SingleConversationID("una", "vic")
			want := map[string]bool{"before": true, "after": true, "during": failOpen}
			a.waitPushes(2101, "ACK(saved) of the two-phase sends", func(f []frame) bool { return len(f) >= 2 })
			got := map[string]int{}
			for _, m := range pullAll(t, base, a.token, conv) {
				if m["status"] == "normal" {
					got[fmt.Sprint(m["client_msg_id"])]++
				}
			}
			for id, present := range want {
				if present && got[id] != 1 || !present && got[id] != 0 {
					t.Errorf("%s saved %d times (%v)", id, got[id], got)
				}
			}
		})
	}
}

// TestSeqsStayAboveEverythingAfterRedisWipe: Redis loses every key
// mid-conversation; the next seqs are above every seq issued before.
func TestSeqsStayAboveEverythingAfterRedisWipe(t *testing.T) {
	t.Parallel()
	cfg := realConfig(t)
	base, _, _ := startApp(t, cfg)
	a := dial(t, base, "wes", user(t, base, "wes"))
	user(t, base, "xia")
	var last float64
	for i := 0; i < 3; i++ {
		r := a.send("xia", fmt.Sprint("pre", i), "x")
		last = r.field("seq").(float64)
	}
	a.waitPushes(2101, "saved before the wipe", func(f []frame) bool { return len(f) >= 3 })
	rdb, _ := storetest.Redis(t)
	// Wipe only this test's keys but the tokens: the session must stay valid.
	iter := rdb.Scan(context.Background(), 0, cfg.Redis.KeyPrefix+":{*", 1000).Iterator()
	for iter.Next(context.Background()) {
		rdb.Del(context.Background(), iter.Val())
	}
	r := a.send("xia", "post", "y")
	if r.ErrCode != 0 || r.field("seq").(float64) <= last {
		t.Fatalf("after the wipe: %s (last seq before: %v)", r.Data, last)
	}
}

// TestAdminModeShowsAndFollowsTheSwitches: GET /admin/mode needs the admin
// token and reports the switches; SetMode (SIGHUP) changes what a send gets.
func TestAdminModeShowsAndFollowsTheSwitches(t *testing.T) {
	t.Parallel()
	cfg := realConfig(t)
	a, base := startAppValue(t, cfg)
	if code, env := call(t, "GET", base+"/admin/mode", "", ""); code != 403 || env["err_msg"] != "forbidden" {
		t.Fatalf("without the admin token: %d %v", code, env)
	}
	code, env := call(t, "GET", base+"/admin/mode", "", "admin-token")
	if code != 200 || dataField(env, "two_phase_enabled") != "true" || dataField(env, "deliver_before_saved") != "false" {
		t.Fatalf("mode: %d %v", code, env)
	}
	c := dial(t, base, "yan", user(t, base, "yan"))
	user(t, base, "zed")
	if r := c.send("zed", "m1", "x"); r.field("ack_type") != "accepted" {
		t.Fatalf("two-phase: %s", r.Data)
	}
	tp := cfg.TwoPhase
	tp.Enabled = false
	a.SetMode(tp)
	if r := c.send("zed", "m2", "x"); r.field("ack_type") != "saved" || r.field("seq") != 2.0 {
		t.Fatalf("after switching two-phase off: %s", r.Data)
	}
	if _, env := call(t, "GET", base+"/admin/mode", "", "admin-token"); dataField(env, "two_phase_enabled") != "false" {
		t.Fatalf("mode after the switch: %v", env)
	}
}

// pullAll pages through a conversation from seq 1 to its max_seq by HTTP,
// the way a client fills gaps, and returns every entry (placeholders too).
func pullAll(t *testing.T, base, token, conv string) []map[string]any {
	t.Helper()
	var out []map[string]any
	for begin := 1; ; {
		code, env := call(t, "GET", fmt.Sprintf("%s/msg/pull?conversation_id=%s&begin_seq=%d", base, conv, begin), "", token)
		if code != 200 {
			t.Fatalf("pull from %d: %d %v", begin, code, env)
		}
		data, _ := env["data"].(map[string]any)
		msgs, _ := data["messages"].([]any)
		maxSeq, _ := data["max_seq"].(float64)
		for _, m := range msgs {
			out = append(out, m.(map[string]any))
		}
		if len(msgs) == 0 || float64(begin+len(msgs)) > maxSeq {
			return out
		}
		begin += len(msgs)
	}
}

// TestEmbeddedRestartContinuesWithoutGap: the embedded Redis starts empty,
// so seqs resume from the database; a graceful stop gives back what its
// leases never issued, so the next start continues at the next seq.
func TestEmbeddedRestartContinuesWithoutGap(t *testing.T) {
	t.Parallel()
	cfg := embeddedConfig(t)
	cfg.JWT.Secret = validSecret
	base, _, stop := startApp(t, cfg)
	ta := user(t, base, "amy")
	user(t, base, "bo")
	a := dial(t, base, "amy", ta)
	for i := 1; i <= 3; i++ {
		if r := a.send("bo", fmt.Sprint("m", i), "x"); r.field("seq") != float64(i) {
			t.Fatalf("first run m%d: %s", i, r.Data)
		}
	}
	a.waitPushes(2101, "saved before the stop", func(f []frame) bool { return len(f) >= 3 })
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	base, _, _ = startApp(t, cfg) // same SQLite file, a fresh in-process Redis
	code, env := call(t, "POST", base+"/auth/login", `{"user_id":"amy","password":"plum-tart-9","platform_id":5}`, "")
	if code != 200 {
		t.Fatalf("login after restart: %d %v", code, env)
	}
	a = dial(t, base, "amy", dataField(env, "token"))
	if r := a.send("bo", "m4", "x"); r.ErrCode != 0 || r.field("seq") != 4.0 {
		t.Fatalf("after restart: %s, want seq 4", r.Data)
	}
}
