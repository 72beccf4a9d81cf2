package app

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nexo-im/nexo/configs"
	"github.com/nexo-im/nexo/domain"
)

// modUsers creates users through the server API and returns their tokens.
func modUsers(t *testing.T, base string, ids ...string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, u := range ids {
		mustAPI(t, "POST", base+"/api/user/create", fmt.Sprintf(`{"user_id":%q,"nickname":%q}`, u, u))
		out[u] = fmt.Sprint(mustAPI(t, "POST", base+"/api/token", fmt.Sprintf(`{"user_id":%q,"platform_id":5}`, u))["token"])
	}
	return out
}

// httpSend sends a text message from the token's user to recv over POST
// /msg/send.
func httpSend(t *testing.T, base, token, recv, clientMsgID string) (int, map[string]any) {
	t.Helper()
	return call(t, "POST", base+"/msg/send", fmt.Sprintf(`{"client_msg_id":%q,"session_type":1,"recv_id":%q,"msg_type":101,"content":{"text":"hi"}}`, clientMsgID, recv), token)
}

// refusedBlocked fails unless a refusal is blocked (403, err_code 1222)
// and returns its detail with recv blanked, so refusals of different
// causes can be compared word for word.
func refusedBlocked(t *testing.T, what string, code int, env map[string]any, recv string) string {
	t.Helper()
	if code != 403 || env["err_msg"] != "blocked" || env["err_code"] != 1222.0 {
		t.Fatalf("%s: %d %v, want 403 blocked 1222", what, code, env)
	}
	return strings.ReplaceAll(fmt.Sprint(envData(env)["detail"]), recv, "X")
}

// TestBlockingOnEveryPath: a blocked user's single-chat messages are
// refused on WebSocket, HTTP and the server API, on the two-phase and the
// synchronous path, and so are their typing indicators and group
// invitations of the blocker; the refusal reads as a dm_policy refusal
// does; blocking hides nothing in a shared group; unblocking lifts it at
// once; the app's system notifications are not a user's and pass.
func TestBlockingOnEveryPath(t *testing.T) {
	for _, mode := range []struct {
		name string
		tp   configs.TwoPhase
	}{
		{"two_phase", configs.TwoPhase{Enabled: true, FailOpen: true}},
		{"synchronous", configs.TwoPhase{Enabled: false, FailOpen: true}},
	} {
		t.Run(mode.name, func(t *testing.T) {
			t.Parallel()
			cfg := apiConfig(t)
			cfg.TwoPhase = mode.tp
			cfg.TwoPhase.IdempotencyTTL = configs.Default().TwoPhase.IdempotencyTTL
			base, _, _ := startApp(t, cfg)
			tok := modUsers(t, base, "alice", "mallory", "bob", "carol", "dave")
			mallory := dial(t, base, "mallory", tok["mallory"])
			carol := dial(t, base, "carol", tok["carol"])

			if code, env := call(t, "POST", base+"/user/block", `{"user_id":"mallory"}`, tok["alice"]); code != 200 {
				t.Fatalf("block: %d %v", code, env)
			}
			if code, env := call(t, "POST", base+"/user/block", `{"user_id":"alice"}`, tok["alice"]); code != 400 {
				t.Fatalf("blocking oneself: %d %v", code, env)
			}
			code, env := call(t, "GET", base+"/user/blocks", "", tok["alice"])
			list, _ := envData(env)["blocks"].([]any)
			if code != 200 || len(list) != 1 || list[0].(map[string]any)["user_id"] != "mallory" {
				t.Fatalf("blocks: %d %v", code, env)
			}

			// Every way mallory could reach alice.
			r := mallory.send("alice", "ws-1", "hi")
			if r.ErrMsg != "blocked" || r.ErrCode != 1222 {
				t.Fatalf("WS 1003 to the blocker: %+v", r)
			}
			code, env = httpSend(t, base, tok["mallory"], "alice", "http-1")
			blockDetail := refusedBlocked(t, "HTTP /msg/send", code, env, "alice")
			code, env = serverAPI(t, "POST", base+"/api/msg/send", `{"send_id":"mallory","session_type":1,"recv_id":"alice","msg_type":101,"content":{"text":"hi"}}`)
			refusedBlocked(t, "server API /api/msg/send", code, env, "alice")
			conv := domain.SingleConversationID("alice", "mallory")
			r = mallory.request(1103, map[string]any{"conversation_id": conv, "typing": true})
			if r.ErrMsg != "blocked" || r.ErrCode != 1222 {
				t.Fatalf("typing to the blocker: %+v", r)
			}
			// Group invitations of the blocker: creating a group with her,
			// inviting her, on the user routes and the server API.
			code, env = call(t, "POST", base+"/group/create", `{"name":"trap","member_ids":["alice","carol"]}`, tok["mallory"])
			refusedBlocked(t, "group create with the blocker", code, env, "alice")
			code, env = call(t, "POST", base+"/group/create", `{"name":"m","member_ids":["carol","dave"]}`, tok["mallory"])
			if code != 200 {
				t.Fatalf("group create: %d %v", code, env)
			}
			mg := dataField(env, "group_id")
			code, env = call(t, "POST", base+"/group/invite", fmt.Sprintf(`{"group_id":%q,"user_ids":["alice"]}`, mg), tok["mallory"])
			refusedBlocked(t, "invite the blocker", code, env, "alice")
			code, env = serverAPI(t, "POST", base+"/api/group/invite", fmt.Sprintf(`{"op_user_id":"mallory","group_id":%q,"user_ids":["alice"]}`, mg))
			refusedBlocked(t, "server API invite of the blocker", code, env, "alice")

			// dm_policy nobody reads the same as a block.
			if code, env := call(t, "PUT", base+"/user/update", `{"dm_policy":"nobody"}`, tok["bob"]); code != 200 || dataField(env, "dm_policy") != "nobody" {
				t.Fatalf("dm_policy nobody: %d %v", code, env)
			}
			code, env = httpSend(t, base, tok["carol"], "bob", "http-2")
			if d := refusedBlocked(t, "dm_policy nobody", code, env, "bob"); d != blockDetail {
				t.Fatalf("a policy refusal %q differs from a block %q", d, blockDetail)
			}
			if r := carol.send("bob", "ws-2", "hi"); r.ErrMsg != "blocked" {
				t.Fatalf("WS to dm_policy nobody: %+v", r)
			}
			// shared_groups: carol may write once she shares a group with bob.
			if code, env := call(t, "PUT", base+"/user/update", `{"dm_policy":"shared_groups"}`, tok["bob"]); code != 200 {
				t.Fatalf("dm_policy shared_groups: %d %v", code, env)
			}
			code, env = httpSend(t, base, tok["carol"], "bob", "http-3")
			refusedBlocked(t, "dm_policy shared_groups, no shared group", code, env, "bob")
			mustAPI(t, "POST", base+"/api/group/create", `{"op_user_id":"bob","name":"b","member_ids":["carol","alice"]}`)
			waitAccepted(t, base, tok["carol"], "bob", "http-4")
			if d := mustAPI(t, "GET", base+"/api/user/get?user_id=bob", ""); d["dm_policy"] != "shared_groups" {
				t.Fatalf("server API get: %v", d)
			}

			// A shared group hides nothing: alice invites mallory to her
			// group (mallory did not block her) and mallory speaks there.
			code, env = call(t, "POST", base+"/group/create", `{"name":"shared","member_ids":["mallory","carol"]}`, tok["alice"])
			if code != 200 {
				t.Fatalf("alice's group: %d %v", code, env)
			}
			ag := dataField(env, "group_id")
			if r := mallory.request(1003, map[string]any{"client_msg_id": "g-1", "session_type": 3, "group_id": ag, "msg_type": 101,
				"content": map[string]any{"text": "in the group"}}); r.ErrCode != 0 {
				t.Fatalf("mallory in a shared group: %+v", r)
			}
			// The app's system notification from send_id mallory is the
			// app's, not mallory's: not refused.
			mustAPI(t, "POST", base+"/api/msg/send_notification", `{"send_id":"mallory","session_type":1,"recv_id":"alice","text":"notice"}`)

			// Unblocking applies at once on this instance.
			if code, env := call(t, "POST", base+"/user/unblock", `{"user_id":"mallory"}`, tok["alice"]); code != 200 {
				t.Fatalf("unblock: %d %v", code, env)
			}
			if r := mallory.send("alice", "ws-3", "hi again"); r.ErrCode != 0 {
				t.Fatalf("after unblock: %+v", r)
			}
		})
	}
}

// waitAccepted sends over HTTP until the send is accepted (a decision is
// cached for up to account.DefaultDMGateTTL after a group change).
func waitAccepted(t *testing.T, base, token, recv, clientMsgID string) {
	t.Helper()
	for i := 0; ; i++ {
		code, env := httpSend(t, base, token, recv, fmt.Sprint(clientMsgID, "-", i))
		if code == 200 {
			return
		}
		if i >= 30 {
			t.Fatalf("send to %s never accepted: %d %v", recv, code, env)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
