package app

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// groupSend sends a text to group g over WebSocket (c) and returns the
// reason ("" when accepted).
func groupSendWS(c *wsClient, g, id string) string {
	r := c.request(1003, map[string]any{"client_msg_id": id, "session_type": 3, "group_id": g, "msg_type": 101,
		"content": map[string]any{"text": "hi"}})
	return r.ErrMsg
}

// groupSendHTTP sends a text to group g over POST /msg/send and returns
// the reason ("" when accepted).
func groupSendHTTP(t *testing.T, base, token, g, id string) string {
	t.Helper()
	_, env := call(t, "POST", base+"/msg/send", fmt.Sprintf(`{"client_msg_id":%q,"session_type":3,"group_id":%q,"msg_type":101,"content":{"text":"hi"}}`, id, g), token)
	return fmt.Sprint(env["err_msg"])
}

// groupSendAPI sends a text to group g as user over the server API and
// returns the reason ("" when accepted).
func groupSendAPI(t *testing.T, base, user, g, id string) string {
	t.Helper()
	_, env := serverAPI(t, "POST", base+"/api/msg/send", fmt.Sprintf(`{"send_id":%q,"client_msg_id":%q,"session_type":3,"group_id":%q,"msg_type":101,"content":{"text":"hi"}}`, user, id, g))
	return fmt.Sprint(env["err_msg"])
}

// TestGroupModerationOnEveryPath: a muted member, a plain member of a
// muted group and a banned user are refused on WebSocket, HTTP and the
// server API; only the owner and admins moderate, never the owner nor (as
// an admin) an admin; a mute outlives quitting and re-joining; a banned
// user re-joins an open group neither by themself nor by invitation (user
// API or server API) until unbanned; every change is announced and
// audited.
func TestGroupModerationOnEveryPath(t *testing.T) {
	t.Parallel()
	base, logs, _ := startApp(t, apiConfig(t))
	tok := modUsers(t, base, "olga", "mia", "max", "ann")
	maxC, ann := dial(t, base, "max", tok["max"]), dial(t, base, "ann", tok["ann"])

	code, env := call(t, "POST", base+"/group/create", `{"name":"mod","member_ids":["mia","max","ann"],"join_policy":"open"}`, tok["olga"])
	if code != 200 {
		t.Fatalf("create: %d %v", code, env)
	}
	g := dataField(env, "group_id")
	if code, env := call(t, "POST", base+"/group/set_role", fmt.Sprintf(`{"group_id":%q,"user_id":"mia","role_level":60}`, g), tok["olga"]); code != 200 {
		t.Fatalf("set_role: %d %v", code, env)
	}
	post := func(path, body, who string) (int, map[string]any) {
		return call(t, "POST", base+path, strings.ReplaceAll(body, "G", g), tok[who])
	}

	// Who may mute whom.
	for _, c := range []struct{ who, body, want string }{
		{"ann", `{"group_id":"G","user_id":"max","seconds":60}`, "forbidden"},  // a plain member
		{"mia", `{"group_id":"G","user_id":"olga","seconds":60}`, "forbidden"}, // the owner
		{"olga", `{"group_id":"G","user_id":"olga","seconds":60}`, "bad_request"},
		{"mia", `{"group_id":"G","user_id":"max","seconds":-1}`, "bad_request"},
	} {
		if code, env := post("/group/mute_member", c.body, c.who); env["err_msg"] != c.want {
			t.Fatalf("%s mutes %s: %d %v, want %s", c.who, c.body, code, env, c.want)
		}
	}
	code, env = post("/group/mute_member", `{"group_id":"G","user_id":"max","seconds":60}`, "mia")
	if code != 200 || envData(env)["mute_until"] == nil {
		t.Fatalf("mute max: %d %v", code, env)
	}
	ann.waitPushes(2001, "the member_muted notification", func(f []frame) bool { return countMsgType(f, 1510) == 1 })
	for path, reason := range map[string]string{
		"ws": groupSendWS(maxC, g, "mx-1"), "http": groupSendHTTP(t, base, tok["max"], g, "mx-2"), "server api": groupSendAPI(t, base, "max", g, "mx-3"),
	} {
		if reason != "forbidden" {
			t.Fatalf("a muted member's send over %s: %q", path, reason)
		}
	}
	if r := groupSendWS(ann, g, "an-1"); r != "" {
		t.Fatalf("ann is not muted: %q", r)
	}
	// Quitting and re-joining the open group does not lift the mute.
	if code, env := post("/group/quit", `{"group_id":"G"}`, "max"); code != 200 {
		t.Fatalf("quit: %d %v", code, env)
	}
	if code, env := post("/group/join", `{"group_id":"G"}`, "max"); code != 200 {
		t.Fatalf("re-join: %d %v", code, env)
	}
	if r := groupSendHTTP(t, base, tok["max"], g, "mx-4"); r != "forbidden" {
		t.Fatalf("a muted member's send after re-joining: %q", r)
	}
	mustAPI(t, "POST", base+"/api/group/mute_member", fmt.Sprintf(`{"op_user_id":"olga","group_id":%q,"user_id":"max","seconds":0}`, g))
	if r := groupSendWS(maxC, g, "mx-5"); r != "" {
		t.Fatalf("after the mute was lifted: %q", r)
	}

	// The whole group muted: only the owner and admins speak.
	if code, env := post("/group/mute", `{"group_id":"G","muted":true}`, "ann"); env["err_msg"] != "forbidden" {
		t.Fatalf("a member mutes the group: %d %v", code, env)
	}
	code, env = post("/group/mute", `{"group_id":"G","muted":true}`, "mia")
	if code != 200 || envData(env)["muted"] != true {
		t.Fatalf("mute the group: %d %v", code, env)
	}
	ann.waitPushes(2001, "the group_muted notification", func(f []frame) bool { return countMsgType(f, 1511) == 1 })
	if r := groupSendWS(ann, g, "an-2"); r != "forbidden" {
		t.Fatalf("a member in a muted group, WS: %q", r)
	}
	if r := groupSendHTTP(t, base, tok["ann"], g, "an-3"); r != "forbidden" {
		t.Fatalf("a member in a muted group, HTTP: %q", r)
	}
	if r := groupSendAPI(t, base, "ann", g, "an-4"); r != "forbidden" {
		t.Fatalf("a member in a muted group, server API: %q", r)
	}
	if r := groupSendHTTP(t, base, tok["mia"], g, "mi-1"); r != "" {
		t.Fatalf("an admin in a muted group: %q", r)
	}
	if r := groupSendHTTP(t, base, tok["olga"], g, "ol-1"); r != "" {
		t.Fatalf("the owner in a muted group: %q", r)
	}
	mustAPI(t, "POST", base+"/api/group/mute", fmt.Sprintf(`{"op_user_id":"olga","group_id":%q,"muted":false}`, g))
	if r := groupSendWS(ann, g, "an-5"); r != "" {
		t.Fatalf("after the group mute was lifted: %q", r)
	}

	// Ban: kicked, and no way back until unbanned.
	if code, env := post("/group/ban", `{"group_id":"G","user_id":"mia"}`, "ann"); env["err_msg"] != "forbidden" {
		t.Fatalf("a member bans: %d %v", code, env)
	}
	code, env = post("/group/ban", `{"group_id":"G","user_id":"max"}`, "mia")
	if code != 200 || dataField(env, "status") != "banned" {
		t.Fatalf("ban: %d %v", code, env)
	}
	ann.waitPushes(2001, "the member_banned notification", func(f []frame) bool { return countMsgType(f, 1512) == 1 })
	if r := groupSendWS(maxC, g, "mx-6"); r != "member_not_active" {
		t.Fatalf("a banned user's send, WS: %q", r)
	}
	if r := groupSendHTTP(t, base, tok["max"], g, "mx-7"); r != "member_not_active" {
		t.Fatalf("a banned user's send, HTTP: %q", r)
	}
	if code, env := post("/group/join", `{"group_id":"G"}`, "max"); env["err_msg"] != "join_not_allowed" {
		t.Fatalf("a banned user re-joins the open group: %d %v", code, env)
	}
	if code, env := post("/group/invite", `{"group_id":"G","user_ids":["max"]}`, "olga"); env["err_msg"] != "forbidden" {
		t.Fatalf("inviting a banned user: %d %v", code, env)
	}
	if code, env := serverAPI(t, "POST", base+"/api/group/invite", fmt.Sprintf(`{"op_user_id":"olga","group_id":%q,"user_ids":["max"]}`, g)); env["err_msg"] != "forbidden" {
		t.Fatalf("inviting a banned user, server API: %d %v", code, env)
	}
	if d := mustAPI(t, "POST", base+"/api/group/unban", fmt.Sprintf(`{"op_user_id":"olga","group_id":%q,"user_id":"max"}`, g)); d["status"] != "kicked" {
		t.Fatalf("unban: %v", d)
	}
	if code, env := post("/group/join", `{"group_id":"G"}`, "max"); env["err_msg"] != "join_not_allowed" {
		t.Fatalf("an unbanned user is as a kicked one: %d %v", code, env)
	}
	if code, env := post("/group/invite", `{"group_id":"G","user_ids":["max"]}`, "olga"); code != 200 {
		t.Fatalf("inviting an unbanned user: %d %v", code, env)
	}
	if r := groupSendHTTP(t, base, tok["max"], g, "mx-8"); r != "" {
		t.Fatalf("after unban and invitation: %q", r)
	}

	for _, action := range []string{"mute_member", "mute_group", "ban", "unban"} {
		auditLine(t, logs, "group_moderation", map[string]string{"action": action, "group_id": g})
	}
}

// TestModerationAcrossInstances: a block made through one instance refuses
// sends through another within the DM gate's cache time (1 s), and a
// group ban or mute through one refuses sends through the other at once
// (the member cache is invalidated everywhere).
func TestModerationAcrossInstances(t *testing.T) {
	t.Parallel()
	nodes := startCluster(t, 2, nil)
	a, b := nodes[0].base, nodes[1].base
	tok := map[string]string{}
	for _, u := range []string{"alice", "mallory", "carol"} {
		tok[u] = user(t, a, u)
	}
	// mallory's decision is cached on b before the block.
	if code, env := httpSend(t, b, tok["mallory"], "alice", "x-0"); code != 200 {
		t.Fatalf("before the block: %d %v", code, env)
	}
	if code, env := call(t, "POST", a+"/user/block", `{"user_id":"mallory"}`, tok["alice"]); code != 200 {
		t.Fatalf("block on n1: %d %v", code, env)
	}
	blockedAt := time.Now()
	for i := 0; ; i++ {
		code, env := httpSend(t, b, tok["mallory"], "alice", fmt.Sprint("x-", i+1))
		if env["err_msg"] == "blocked" {
			break
		}
		if code != 200 || time.Since(blockedAt) > 1500*time.Millisecond {
			t.Fatalf("a send through n2 %v after the block on n1: %d %v", time.Since(blockedAt), code, env)
		}
		time.Sleep(50 * time.Millisecond)
	}

	code, env := call(t, "POST", a+"/group/create", `{"name":"x","member_ids":["mallory","carol"]}`, tok["alice"])
	if code != 200 {
		t.Fatalf("create: %d %v", code, env)
	}
	g := dataField(env, "group_id")
	if r := groupSendHTTP(t, b, tok["carol"], g, "c-1"); r != "" {
		t.Fatalf("before the mute: %q", r)
	}
	if code, env := call(t, "POST", a+"/group/mute_member", fmt.Sprintf(`{"group_id":%q,"user_id":"carol","seconds":60}`, g), tok["alice"]); code != 200 {
		t.Fatalf("mute on n1: %d %v", code, env)
	}
	if r := groupSendHTTP(t, b, tok["carol"], g, "c-2"); r != "forbidden" {
		t.Fatalf("a muted member's send through n2: %q", r)
	}
	if code, env := call(t, "POST", a+"/group/ban", fmt.Sprintf(`{"group_id":%q,"user_id":"mallory"}`, g), tok["alice"]); code != 200 {
		t.Fatalf("ban on n1: %d %v", code, env)
	}
	if r := groupSendHTTP(t, b, tok["mallory"], g, "m-1"); r != "member_not_active" {
		t.Fatalf("a banned user's send through n2: %q", r)
	}
	if code, env := call(t, "POST", b+"/group/join", fmt.Sprintf(`{"group_id":%q}`, g), tok["mallory"]); env["err_msg"] != "join_not_allowed" {
		t.Fatalf("a banned user's join through n2: %d %v", code, env)
	}
}
