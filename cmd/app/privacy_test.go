package app

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/redis/go-redis/v9"

	"github.com/nexo-im/nexo/configs"
	"github.com/nexo-im/nexo/store"
	"github.com/nexo-im/nexo/store/storetest"
)

// registerNamed registers userID with nickname and the test password and
// logs in on platform 5.
func registerNamed(t *testing.T, base, userID, nickname string) string {
	t.Helper()
	if code, env := call(t, "POST", base+"/user/register", fmt.Sprintf(`{"user_id":%q,"nickname":%q,"password":%q}`, userID, nickname, testPassword), ""); code != 200 {
		t.Fatalf("register %s: %d %v", userID, code, env)
	}
	return loginOn(t, base, userID, 5)
}

// mustCall fails unless the call answers 200 and returns its data.
func mustCall(t *testing.T, method, url, body, token string) map[string]any {
	t.Helper()
	code, env := call(t, method, url, body, token)
	if code != 200 {
		t.Fatalf("%s %s %s: %d %v", method, url, body, code, env)
	}
	return envData(env)
}

// dbTablesHolding lists the tables of db with a row holding needle.
func dbTablesHolding(t *testing.T, db *store.DB, needle string) []string {
	t.Helper()
	tables, err := db.Gorm.Migrator().GetTables()
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, table := range tables {
		rows, err := db.Gorm.Raw("SELECT * FROM `" + table + "`").Rows()
		if err != nil {
			t.Fatalf("read %s: %v", table, err)
		}
		cols, _ := rows.Columns()
		vals := make([]sql.RawBytes, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		for rows.Next() {
			if err := rows.Scan(ptrs...); err != nil {
				t.Fatal(err)
			}
			hit := false
			for _, v := range vals {
				hit = hit || bytes.Contains(v, []byte(needle))
			}
			if hit {
				out = append(out, table)
				break
			}
		}
		_ = rows.Close()
	}
	return out
}

// redisKeysHolding lists the keys under prefix whose name contains name
// or whose value contains value.
func redisKeysHolding(t *testing.T, rdb redis.UniversalClient, prefix, name, value string) (byName, byValue []string) {
	t.Helper()
	ctx := context.Background()
	iter := rdb.Scan(ctx, 0, prefix+":*", 500).Iterator()
	for iter.Next(ctx) {
		k := iter.Val()
		if strings.Contains(k, name) {
			byName = append(byName, k)
		}
		var dump string
		switch rdb.Type(ctx, k).Val() {
		case "string":
			dump = rdb.Get(ctx, k).Val()
		case "hash":
			dump = fmt.Sprint(rdb.HGetAll(ctx, k).Val())
		case "set":
			dump = fmt.Sprint(rdb.SMembers(ctx, k).Val())
		case "zset":
			dump = fmt.Sprint(rdb.ZRange(ctx, k, 0, -1).Val())
		case "list":
			dump = fmt.Sprint(rdb.LRange(ctx, k, 0, -1).Val())
		case "stream":
			dump = fmt.Sprint(rdb.XRange(ctx, k, "-", "+").Val())
		}
		if strings.Contains(dump, value) {
			byValue = append(byValue, k)
		}
	}
	if err := iter.Err(); err != nil {
		t.Fatal(err)
	}
	return byName, byValue
}

// TestAccountDeletionAcrossInstances: POST /user/delete through one
// instance refuses the user's token on the other at once and closes their
// WebSocket there within 1 s; login and re-registration fail; the owned
// group with admins goes to the longest-serving admin, the one without is
// dismissed, the others are quit, with notifications; the messages stay
// under the reserved user_id; and no table or Redis key holds the profile.
func TestAccountDeletionAcrossInstances(t *testing.T) {
	t.Parallel()
	nodes := startCluster(t, 2, nil)
	a, b := nodes[0].base, nodes[1].base
	nick := storetest.RandomName("ZoeNick")
	tok := map[string]string{"zoe": registerNamed(t, a, "zoe", nick)}
	for _, u := range []string{"bob", "carol", "dave"} {
		tok[u] = user(t, a, u)
	}
	mustCall(t, "PUT", a+"/user/update", `{"avatar":"https://example.com/zoe-avatar.png"}`, tok["zoe"])
	group := func(owner string, members ...string) string {
		return dataField(map[string]any{"data": mustCall(t, "POST", a+"/group/create",
			fmt.Sprintf(`{"name":"g","member_ids":["%s"]}`, strings.Join(members, `","`)), tok[owner])}, "group_id")
	}
	owned := group("zoe", "carol", "bob")
	mustCall(t, "POST", a+"/group/invite", fmt.Sprintf(`{"group_id":%q,"user_ids":["dave"]}`, owned), tok["zoe"])
	// dave is made admin first, but carol joined first: she serves longest.
	for _, u := range []string{"dave", "carol"} {
		mustCall(t, "POST", a+"/group/set_role", fmt.Sprintf(`{"group_id":%q,"user_id":%q,"role_level":60}`, owned, u), tok["zoe"])
	}
	lonely := group("zoe", "bob", "carol")
	joined := group("bob", "zoe", "carol")
	if code, env := httpSend(t, a, tok["zoe"], "bob", "z-1"); code != 200 {
		t.Fatalf("send: %d %v", code, env)
	}
	if r := groupSendHTTP(t, a, tok["zoe"], joined, "z-2"); r != "<nil>" && r != "" && r != "ok" {
		t.Logf("group send: %q", r)
	}
	bobWS := dial(t, b, "bob", tok["bob"])
	zoeWS := dial(t, b, "zoe", tok["zoe"])

	if code, env := call(t, "POST", a+"/user/delete", `{"password":"not-the-password"}`, tok["zoe"]); code != 401 || env["err_msg"] != "bad_credentials" {
		t.Fatalf("a wrong password: %d %v", code, env)
	}
	if code, env := call(t, "POST", a+"/user/delete", `{}`, tok["zoe"]); code != 400 {
		t.Fatalf("no password: %d %v", code, env)
	}
	began := time.Now()
	res := mustCall(t, "POST", a+"/user/delete", fmt.Sprintf(`{"password":%q}`, testPassword), tok["zoe"])
	t.Logf("deletion took %v: %v", time.Since(began), res)

	// The token is refused on the other instance (polled: the first try
	// already should be).
	for {
		code, _ := call(t, "GET", b+"/user/info", "", tok["zoe"])
		if code == 401 {
			break
		}
		if time.Since(began) > 10*time.Second {
			t.Fatalf("the token still works on n2: %d", code)
		}
		time.Sleep(20 * time.Millisecond) // polling a condition with a deadline
	}
	propagation(t, nodes, "the deleted user's WebSocket on n2 closes", zoeWS.closed)
	t.Logf("token refused and WebSocket closed on n2 %v after the deletion request began", time.Since(began))
	wsURL := strings.Replace(b, "http://", "ws://", 1) + "/ws?platform_id=5&send_id=zoe&token=" + tok["zoe"]
	if conn, resp, err := websocket.DefaultDialer.Dial(wsURL, http.Header{"Origin": []string{b}}); err == nil {
		_ = conn.Close()
		t.Fatal("a WebSocket opens on n2 with the deleted user's token")
	} else if resp == nil || resp.StatusCode != 401 {
		t.Fatalf("the WebSocket handshake with the old token: %v %v", resp, err)
	}
	if code, env := call(t, "POST", b+"/auth/login", fmt.Sprintf(`{"user_id":"zoe","password":%q,"platform_id":5}`, testPassword), ""); code != 401 {
		t.Fatalf("login after deletion: %d %v", code, env)
	}
	for _, id := range []string{"zoe", "Zoe"} {
		if code, env := call(t, "POST", b+"/user/register", fmt.Sprintf(`{"user_id":%q,"nickname":"x","password":%q}`, id, testPassword), ""); code != 409 || env["err_msg"] != "user_exists" {
			t.Fatalf("re-register %s: %d %v", id, code, env)
		}
	}

	// A send to the deleted user through the other instance is refused
	// within the DM gate's cache time.
	for i := 0; ; i++ {
		code, env := httpSend(t, b, tok["bob"], "zoe", fmt.Sprint("to-zoe-", i))
		if env["err_msg"] == "user_not_found" {
			break
		}
		if code != 200 || time.Since(began) > 10*time.Second {
			t.Fatalf("a send to the deleted user through n2: %d %v", code, env)
		}
		time.Sleep(50 * time.Millisecond) // polling a condition with a deadline
	}
	t.Logf("sends to the deleted user refused on n2 %v after the deletion began", time.Since(began))

	tr, _ := res["transferred_groups"].(map[string]any)
	if tr[owned] != "carol" || fmt.Sprint(res["dismissed_groups"]) != fmt.Sprintf("[%s]", lonely) || res["messages_erased"] != false {
		t.Fatalf("groups: %v", res)
	}
	info := mustCall(t, "GET", b+"/group/info?group_id="+owned, "", tok["carol"])
	if info["owner_user_id"] != "carol" {
		t.Fatalf("the owned group: %v", info)
	}
	if info := mustCall(t, "GET", b+"/group/info?group_id="+lonely, "", tok["bob"]); info["status"] == "normal" {
		t.Fatalf("the group without an admin: %v", info)
	}
	members := mustCall(t, "GET", b+"/group/members?group_id="+joined, "", tok["bob"])
	if strings.Contains(fmt.Sprint(members), "zoe") {
		t.Fatalf("zoe is still a member of %s: %v", joined, members)
	}
	// bob saw the usual notifications: a transfer, a dismissal, quits.
	bobWS.waitPushes(2001, "group notifications of the deletion", func(f []frame) bool {
		return countMsgType(f, 1506) == 1 && countMsgType(f, 1508) == 1 && countMsgType(f, 1504) == 2
	})

	pull := mustCall(t, "GET", b+"/msg/pull?conversation_id=si_bob_zoe&begin_seq=1", "", tok["bob"])
	if !strings.Contains(fmt.Sprint(pull["messages"]), "sender_id:zoe") && !strings.Contains(fmt.Sprint(pull["messages"]), "zoe") {
		t.Fatalf("zoe's message stays by default: %v", pull)
	}

	for _, needle := range []string{nick, "zoe-avatar.png"} {
		if got := dbTablesHolding(t, nodes[0].app.db, needle); len(got) > 0 {
			t.Errorf("%q still in tables %v", needle, got)
		}
	}
	byName, byValue := redisKeysHolding(t, nodes[0].app.rdb, nodes[0].app.keys.Prefix, "zoe", nick)
	if len(byValue) > 0 {
		t.Errorf("the nickname is still in Redis keys %v", byValue)
	}
	for _, k := range byName {
		// What may stay, holding no profile: the token floor ("disabled":
		// it refuses app-signed tokens of the reserved ID), the accept
		// step's idempotency records (seq and IDs of a send, gone after
		// two_phase.idempotency_ttl) and conversation seq counters.
		if !strings.Contains(k, ":token_floor:") && !strings.Contains(k, ":idem:") && !strings.Contains(k, ":seq:") {
			t.Errorf("a key of the deleted user stays: %s = %q", k, nodes[0].app.rdb.Get(context.Background(), k).Val())
		}
	}
}

// TestAccountDeletionServerAPIErases: /api/user/delete with
// retention.erase_deleted_users deletes the user's messages too (a pull
// shows their seqs as placeholders), reserves the ID against
// /api/user/create, and deleting an unknown user is user_not_found.
func TestAccountDeletionServerAPIErases(t *testing.T) {
	t.Parallel()
	cfg := apiConfig(t)
	cfg.Retention.EraseDeletedUsers = true
	base, _, _ := startApp(t, cfg)
	tok := modUsers(t, base, "erin", "fred")
	waitAccepted(t, base, tok["erin"], "fred", "e-1")
	waitAccepted(t, base, tok["fred"], "erin", "f-1")
	// Both saved before the deletion.
	deadline := time.Now().Add(10 * time.Second)
	for {
		pull := mustCall(t, "GET", base+"/msg/pull?conversation_id=si_erin_fred&begin_seq=1", "", tok["fred"])
		if ms, _ := pull["messages"].([]any); len(ms) == 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("messages not saved")
		}
		time.Sleep(20 * time.Millisecond) // polling a condition with a deadline
	}
	// erin has no password (made by the server API): only the app deletes her.
	if code, env := call(t, "POST", base+"/user/delete", `{"password":"whatever-it-is"}`, tok["erin"]); code != 403 || env["err_msg"] != "forbidden" {
		t.Fatalf("self-deletion without a password: %d %v", code, env)
	}
	res := mustAPI(t, "POST", base+"/api/user/delete", `{"user_id":"erin"}`)
	if res["messages_erased"] != true {
		t.Fatalf("deletion: %v", res)
	}
	pull := mustCall(t, "GET", base+"/msg/pull?conversation_id=si_erin_fred&begin_seq=1", "", tok["fred"])
	ms, _ := pull["messages"].([]any)
	var senders []string
	for _, m := range ms {
		senders = append(senders, fmt.Sprint(m.(map[string]any)["sender_id"]))
	}
	if len(ms) != 2 || strings.Count(strings.Join(senders, ","), "erin") != 0 {
		t.Fatalf("erin's message is erased, fred's stays: %v", pull)
	}
	if code, env := serverAPI(t, "POST", base+"/api/user/create", `{"user_id":"erin","nickname":"again"}`); code != 409 {
		t.Fatalf("re-create: %d %v", code, env)
	}
	if again := mustAPI(t, "POST", base+"/api/user/delete", `{"user_id":"erin"}`); again["user_id"] != "erin" {
		t.Fatalf("deleting again finishes nothing left: %v", again)
	}
	if code, env := httpSend(t, base, tok["fred"], "erin", "f-2"); code == 200 {
		t.Fatalf("a send to the deleted user: %d %v", code, env)
	}
	if code, env := serverAPI(t, "POST", base+"/api/user/delete", `{"user_id":"nobody-here"}`); code != 404 {
		t.Fatalf("unknown user: %d %v", code, env)
	}
	if code, env := call(t, "GET", base+"/user/info", "", tok["erin"]); code != 401 {
		t.Fatalf("token after deletion: %d %v", code, env)
	}
}

// exportOf reads an export stream and decodes it.
func exportOf(t *testing.T, req *http.Request) (int, map[string]any) {
	t.Helper()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var out map[string]any
	if err := json.Unmarshal(raw, &out); err != nil {
		t.Fatalf("export is not JSON (%d): %v: %.300s", resp.StatusCode, err, raw)
	}
	return resp.StatusCode, out
}

// TestExportClearAndRetention: GET /user/export streams the caller's
// profile, groups, conversations and messages, counted against
// limits.export; /api/user/export does the same for the app; /conversation/clear
// (HTTP and WS 1116) hides the history from the caller alone; a group's
// retention is set by its owner (not a member, HTTP and WS 1117), and a
// sweep past it deletes that conversation's messages only, which pulls
// then show as placeholders.
func TestExportClearAndRetention(t *testing.T) {
	t.Parallel()
	cfg := apiConfig(t)
	cfg.Limits.Export = configs.Rate{Rate: 1, Period: time.Hour, Burst: 1}
	app, base := startAppValue(t, cfg)
	tok := modUsers(t, base, "gina", "hank", "ivy")
	g := dataField(map[string]any{"data": mustCall(t, "POST", base+"/group/create", `{"name":"g","member_ids":["hank","ivy"]}`, tok["gina"])}, "group_id")
	gconv := "sg_" + g
	waitAccepted(t, base, tok["gina"], "hank", "g-1")
	waitAccepted(t, base, tok["hank"], "gina", "h-1")
	if r := groupSendHTTP(t, base, tok["hank"], g, "h-2"); r != "<nil>" && r != "" {
		t.Logf("group send: %q", r)
	}
	// Wait until everything is saved.
	saved := func(token, conv string, n int) {
		deadline := time.Now().Add(10 * time.Second)
		for {
			pull := mustCall(t, "GET", base+"/msg/pull?conversation_id="+conv+"&begin_seq=1", "", token)
			if ms, _ := pull["messages"].([]any); len(ms) >= n {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: fewer than %d messages", conv, n)
			}
			time.Sleep(20 * time.Millisecond) // polling a condition with a deadline
		}
	}
	saved(tok["gina"], "si_gina_hank", 2)
	saved(tok["gina"], gconv, 2) // the creation notification and hank's text

	req, _ := http.NewRequest("GET", base+"/user/export", nil)
	req.Header.Set("Authorization", "Bearer "+tok["gina"])
	code, exp := exportOf(t, req)
	if code != 200 {
		t.Fatalf("export: %d %v", code, exp)
	}
	u, _ := exp["user"].(map[string]any)
	groups, _ := exp["groups"].([]any)
	convs, _ := exp["conversations"].([]any)
	msgs, _ := exp["messages"].([]any)
	if u["user_id"] != "gina" || len(groups) != 1 || len(convs) != 2 || len(msgs) < 4 {
		t.Fatalf("export: user %v, %d groups, %d conversations, %d messages", u, len(groups), len(convs), len(msgs))
	}
	var sent, received bool
	for _, m := range msgs {
		mm := m.(map[string]any)
		sent = sent || mm["sender_id"] == "gina" && mm["conversation_id"] == "si_gina_hank"
		received = received || mm["sender_id"] == "hank"
	}
	if !sent || !received {
		t.Fatalf("export lacks sent (%v) or received (%v) messages: %v", sent, received, msgs)
	}
	if code, env := call(t, "GET", base+"/user/export", "", tok["gina"]); code != 429 || env["err_msg"] != "too_many_requests" {
		t.Fatalf("a second export within the hour: %d %v", code, env)
	}
	req, _ = http.NewRequest("GET", base+"/api/user/export?user_id=hank", nil)
	req.Header.Set("Authorization", "apikey "+apiKey)
	if code, exp := exportOf(t, req); code != 200 || exp["user"].(map[string]any)["user_id"] != "hank" {
		t.Fatalf("server API export: %d %v", code, exp["user"])
	}
	if code, env := serverAPI(t, "GET", base+"/api/user/export?user_id=nobody-here", ""); code != 404 {
		t.Fatalf("server API export of nobody: %d %v", code, env)
	}

	// Clear: gina's view of the single chat empties, hank's stays.
	res := mustCall(t, "POST", base+"/conversation/clear", `{"conversation_id":"si_gina_hank"}`, tok["gina"])
	if res["cleared_seq"] != 2.0 {
		t.Fatalf("clear: %v", res)
	}
	if ms, _ := mustCall(t, "GET", base+"/msg/pull?conversation_id=si_gina_hank&begin_seq=1", "", tok["gina"])["messages"].([]any); len(ms) != 0 {
		t.Fatalf("gina still sees %v", ms)
	}
	if ms, _ := mustCall(t, "POST", base+"/msg/pull_by_seqs", `{"conversation_id":"si_gina_hank","seqs":[1,2]}`, tok["gina"])["messages"].([]any); len(ms) != 2 || ms[0].(map[string]any)["content"] != nil && fmt.Sprint(ms[0]) == fmt.Sprint(ms[1]) {
		t.Logf("by seqs after clear: %v", ms)
	}
	if ms, _ := mustCall(t, "GET", base+"/msg/pull?conversation_id=si_gina_hank&begin_seq=1", "", tok["hank"])["messages"].([]any); len(ms) != 2 {
		t.Fatalf("hank lost his history: %v", ms)
	}
	if code, env := call(t, "POST", base+"/conversation/clear", `{"conversation_id":"si_hank_ivy"}`, tok["gina"]); code != 403 {
		t.Fatalf("clearing someone else's conversation: %d %v", code, env)
	}
	if code, env := call(t, "POST", base+"/conversation/clear", `{"conversation_id":"nope"}`, tok["gina"]); code != 400 {
		t.Fatalf("a malformed conversation_id: %d %v", code, env)
	}
	ivy := dial(t, base, "ivy", tok["ivy"])
	if f := ivy.request(1116, map[string]any{"conversation_id": gconv}); f.ErrCode != 0 {
		t.Fatalf("WS clear: %+v", f)
	}
	if ms, _ := mustCall(t, "GET", base+"/msg/pull?conversation_id="+gconv+"&begin_seq=1", "", tok["ivy"])["messages"].([]any); len(ms) != 0 {
		t.Fatalf("ivy still sees %v", ms)
	}

	// Retention: a member may not set it, the owner may; WS 1117 too.
	if f := ivy.request(1117, map[string]any{"conversation_id": gconv, "retention_seconds": 60}); f.ErrCode != 1201 {
		t.Fatalf("a plain member sets retention over WS: %+v", f)
	}
	if code, env := call(t, "POST", base+"/conversation/set_retention", fmt.Sprintf(`{"conversation_id":%q,"retention_seconds":5}`, gconv), tok["gina"]); code != 400 {
		t.Fatalf("under a minute: %d %v", code, env)
	}
	ret := mustCall(t, "POST", base+"/conversation/set_retention", fmt.Sprintf(`{"conversation_id":%q,"retention_seconds":60}`, gconv), tok["gina"])
	if ret["retention_seconds"] != 60.0 || ret["effective_seconds"] != 60.0 {
		t.Fatalf("set retention: %v", ret)
	}
	if got := mustCall(t, "GET", base+"/conversation/retention?conversation_id="+gconv, "", tok["hank"]); got["retention_seconds"] != 60.0 {
		t.Fatalf("retention seen by a member: %v", got)
	}
	// A sweep as if two minutes had passed: the group's messages expire,
	// the single chat (no retention, retention.max_age off) keeps its own.
	swept, err := app.privacy.Sweep(context.Background(), time.Now().Add(2*time.Minute), 1, nil)
	if err != nil || swept.Deleted < 2 {
		t.Fatalf("sweep: %+v %v", swept, err)
	}
	pull := mustCall(t, "GET", base+"/msg/pull?conversation_id="+gconv+"&begin_seq=1", "", tok["hank"])
	for _, m := range pull["messages"].([]any) {
		if mm := m.(map[string]any); mm["sender_id"] != nil && mm["sender_id"] != "" {
			t.Fatalf("an expired message is served: %v", mm)
		}
	}
	if ms, _ := mustCall(t, "GET", base+"/msg/pull?conversation_id=si_gina_hank&begin_seq=1", "", tok["hank"])["messages"].([]any); len(ms) != 2 {
		t.Fatalf("a conversation without retention lost messages: %v", ms)
	}
}

// TestDeletionPasswordGuessesAreLimited: the password of POST /user/delete
// counts as a login attempt, so a stolen token cannot guess it faster than
// limits.login_account allows; the account stays.
func TestDeletionPasswordGuessesAreLimited(t *testing.T) {
	t.Parallel()
	cfg := realConfig(t)
	cfg.Limits.LoginAccount = configs.Rate{Rate: 2, Period: time.Hour, Burst: 2}
	base, _, _ := startApp(t, cfg)
	tok := user(t, base, "gus") // a successful login clears the account's count
	for i := 1; i <= 2; i++ {
		if code, env := call(t, "POST", base+"/user/delete", fmt.Sprintf(`{"password":"guess-number-%d"}`, i), tok); code != 401 {
			t.Fatalf("guess %d: %d %v", i, code, env)
		}
	}
	if code, env := call(t, "POST", base+"/user/delete", `{"password":"guess-number-3"}`, tok); code != 429 || env["err_msg"] != "too_many_requests" {
		t.Fatalf("a guess past limits.login_account: %d %v", code, env)
	}
	if code, env := call(t, "GET", base+"/user/info", "", tok); code != 200 {
		t.Fatalf("the account after the guesses: %d %v", code, env)
	}
}
