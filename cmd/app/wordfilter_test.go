package app

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nexo-im/nexo/configs"
)

// refusedWord fails unless a refusal is blocked_word (403, err_code 1260)
// naming field and not the word.
func refusedWord(t *testing.T, what string, code int, env map[string]any, field, word string) {
	t.Helper()
	detail := fmt.Sprint(envData(env)["detail"])
	if code != 403 || env["err_msg"] != "blocked_word" || env["err_code"] != 1260.0 || !strings.Contains(detail, field) ||
		strings.Contains(strings.ToLower(detail), strings.ToLower(word)) {
		t.Fatalf("%s: %d %v, want 403 blocked_word 1260 naming %s", what, code, env, field)
	}
}

// wordConfig is apiConfig with registration open and the word filter on.
func wordConfig(t *testing.T, action string, words ...string) configs.Config {
	cfg := apiConfig(t)
	cfg.Auth.Registration = configs.RegistrationOpen
	cfg.Moderation = configs.Moderation{BlockedWords: words, Action: action}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	return cfg
}

// TestWordFilterOnEveryPath: with moderation.action refuse, a blocked
// word — in any letter case or width — is refused with blocked_word in a
// text message over HTTP and WebSocket (101 and 106), in a custom
// message's search_text, in a nickname at registration and update, and in
// a group name at create and update; the server API's forms pass (the app
// decides). A reload (SIGHUP's SetModeration) switches to mask: the same
// texts arrive masked, one * per character; a reload from a file replaces
// the words, and a reload that fails keeps them.
func TestWordFilterOnEveryPath(t *testing.T) {
	t.Parallel()
	a, base := startAppValue(t, wordConfig(t, configs.ModerationRefuse, "Spam", "坏蛋"))
	tok := modUsers(t, base, "alice", "bob", "carol")
	alice, bob := dial(t, base, "alice", tok["alice"]), dial(t, base, "bob", tok["bob"])

	code, env := call(t, "POST", base+"/msg/send", `{"client_msg_id":"h1","session_type":1,"recv_id":"bob","msg_type":101,"content":{"text":"buy ＳＰＡＭ now"}}`, tok["alice"])
	refusedWord(t, "HTTP /msg/send", code, env, "content.text", "spam")
	r := alice.send("bob", "w1", "你这个坏蛋")
	if r.ErrMsg != "blocked_word" || r.ErrCode != 1260 {
		t.Fatalf("WS 1003: %+v", r)
	}
	r = alice.request(1003, map[string]any{"client_msg_id": "w2", "session_type": 1, "recv_id": "bob", "msg_type": 106,
		"content": map[string]any{"text": "@bob sPaM"}, "at_user_ids": []string{"bob"}})
	if r.ErrMsg != "blocked_word" {
		t.Fatalf("WS 1003 msg_type 106: %+v", r)
	}
	r = alice.request(1003, map[string]any{"client_msg_id": "w3", "session_type": 1, "recv_id": "bob", "msg_type": 110,
		"content": map[string]any{"custom": map[string]any{"search_text": "spam here", "n": 1}}})
	if r.ErrMsg != "blocked_word" || !strings.Contains(string(r.Data), "content.custom.search_text") {
		t.Fatalf("WS custom search_text: %+v %s", r, r.Data)
	}
	// A custom body's other members are data, not text: not filtered.
	if r := alice.request(1003, map[string]any{"client_msg_id": "w4", "session_type": 1, "recv_id": "bob", "msg_type": 110,
		"content": map[string]any{"custom": map[string]any{"sku": "spam-1"}}}); r.ErrCode != 0 {
		t.Fatalf("custom without search_text: %+v", r)
	}
	if r := alice.send("bob", "w5", "a clean message"); r.ErrCode != 0 {
		t.Fatalf("clean text: %+v", r)
	}
	// The server API is the app's: exempt.
	mustAPI(t, "POST", base+"/api/msg/send", `{"send_id":"alice","session_type":1,"recv_id":"bob","msg_type":101,"content":{"text":"spam from the app"}}`)
	bob.waitPushes(2001, "the app's message", func(f []frame) bool {
		for _, fr := range f {
			if textOf(fr) == "spam from the app" {
				return true
			}
		}
		return false
	})

	// Nicknames and group names.
	code, env = call(t, "POST", base+"/user/register", `{"user_id":"newbie","nickname":"SPAMMER","password":"plum-tart-9"}`, "")
	refusedWord(t, "register", code, env, "nickname", "spam")
	code, env = call(t, "PUT", base+"/user/update", `{"nickname":"大坏蛋"}`, tok["alice"])
	refusedWord(t, "update nickname", code, env, "nickname", "坏蛋")
	if d := mustAPI(t, "POST", base+"/api/user/update", `{"user_id":"alice","nickname":"spam queen"}`); d["nickname"] != "spam queen" {
		t.Fatalf("server API nickname: %v", d)
	}
	code, env = call(t, "POST", base+"/group/create", `{"name":"Spam club","member_ids":["bob","carol"]}`, tok["alice"])
	refusedWord(t, "group create", code, env, "name", "spam")
	code, env = call(t, "POST", base+"/group/create", `{"name":"club","member_ids":["bob","carol"]}`, tok["alice"])
	if code != 200 {
		t.Fatalf("group create: %d %v", code, env)
	}
	gid := dataField(env, "group_id")
	code, env = call(t, "POST", base+"/group/update", fmt.Sprintf(`{"group_id":%q,"name":"ｓｐａｍ"}`, gid), tok["alice"])
	refusedWord(t, "group update", code, env, "name", "spam")
	mustAPI(t, "POST", base+"/api/group/update", fmt.Sprintf(`{"op_user_id":"alice","group_id":%q,"name":"spam by the app"}`, gid))

	// Reload: mask.
	if err := a.SetModeration(configs.Moderation{BlockedWords: []string{"spam", "坏蛋"}, Action: configs.ModerationMask}); err != nil {
		t.Fatal(err)
	}
	code, env = call(t, "POST", base+"/msg/send", `{"client_msg_id":"h2","session_type":1,"recv_id":"bob","msg_type":101,"content":{"text":"buy ＳＰＡＭ, 坏蛋!"}}`, tok["alice"])
	if code != 200 {
		t.Fatalf("masked send: %d %v", code, env)
	}
	bob.waitPushes(2001, "the masked message", func(f []frame) bool {
		for _, fr := range f {
			if textOf(fr) == "buy ****, **!" {
				return true
			}
		}
		return false
	})
	if r := alice.request(1003, map[string]any{"client_msg_id": "w6", "session_type": 1, "recv_id": "bob", "msg_type": 110,
		"content": map[string]any{"custom": map[string]any{"search_text": "<spam>", "n": 1}}}); r.ErrCode != 0 {
		t.Fatalf("masked custom: %+v", r)
	}
	bob.waitPushes(2001, "the masked custom message", func(f []frame) bool {
		for _, fr := range f {
			c, _ := fr.field("content").(map[string]any)
			if cu, ok := c["custom"].(map[string]any); ok && cu["search_text"] == "<****>" && cu["n"] == 1.0 {
				return true
			}
		}
		return false
	})
	code, env = call(t, "PUT", base+"/user/update", `{"nickname":"Spammy"}`, tok["bob"])
	if code != 200 || dataField(env, "nickname") != "****my" {
		t.Fatalf("masked nickname: %d %v", code, env)
	}

	// Reload from a file: its words replace the list; a failing reload
	// keeps them.
	path := filepath.Join(t.TempDir(), "words.txt")
	if err := os.WriteFile(path, []byte("# the file's words\nfoo bar\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	fileCfg := configs.Moderation{BlockedWordsFile: path, Action: configs.ModerationRefuse}
	if err := a.SetModeration(fileCfg); err != nil {
		t.Fatal(err)
	}
	if r := alice.send("bob", "w7", "spam is fine now"); r.ErrCode != 0 {
		t.Fatalf("after the file reload, spam: %+v", r)
	}
	if r := alice.send("bob", "w8", "FOO BAR"); r.ErrMsg != "blocked_word" {
		t.Fatalf("after the file reload, the file's word: %+v", r)
	}
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	if err := a.SetModeration(fileCfg); err == nil {
		t.Fatal("a reload with the file gone succeeded")
	}
	if r := alice.send("bob", "w9", "foo bar again"); r.ErrMsg != "blocked_word" {
		t.Fatalf("a failed reload dropped the words: %+v", r)
	}
}

// TestWordFilterBeforeBeforeSend: the filter runs before the app's
// before_send webhook — a refused message never reaches it, a masked one
// reaches it masked — and the webhook still decides: it rejects or
// rewrites the masked message as it would any other.
func TestWordFilterBeforeBeforeSend(t *testing.T) {
	t.Parallel()
	rcv := newReceiver(t)
	cfg := hookConfig(t, rcv, configs.EventBeforeSend)
	cfg.Moderation = configs.Moderation{BlockedWords: []string{"spam"}, Action: configs.ModerationMask}
	a, base := startAppValue(t, cfg)
	tok := modUsers(t, base, "amy", "ben")
	amy, ben := dial(t, base, "amy", tok["amy"]), dial(t, base, "ben", tok["ben"])

	if r := amy.send("ben", "c1", "spam and a forbidden word"); r.ErrMsg != "message_rejected" {
		t.Fatalf("before_send reject after masking: %+v", r)
	}
	if r := amy.send("ben", "c2", "spam, rewrite me"); r.ErrCode != 0 {
		t.Fatalf("before_send rewrite after masking: %+v", r)
	}
	ben.waitPushes(2001, "the rewritten message", func(f []frame) bool { return len(f) == 1 && textOf(f[0]) == "rewritten by the app" })
	seen := func() []string {
		var texts []string
		for _, ev := range rcv.wait("before_send calls", func(e []hookEvent) bool { return len(e) >= 2 }) {
			msg, _ := ev.Body["message"].(map[string]any)
			c, _ := msg["content"].(map[string]any)
			texts = append(texts, fmt.Sprint(c["text"]))
		}
		return texts
	}
	if got := strings.Join(seen(), "|"); got != "**** and a forbidden word|****, rewrite me" {
		t.Fatalf("before_send saw %q", got)
	}
	if err := a.SetModeration(configs.Moderation{BlockedWords: []string{"spam"}, Action: configs.ModerationRefuse}); err != nil {
		t.Fatal(err)
	}
	if r := amy.send("ben", "c3", "spam, rewrite me"); r.ErrMsg != "blocked_word" {
		t.Fatalf("refuse: %+v", r)
	}
	if n := len(seen()); n != 2 {
		t.Fatalf("a refused message reached before_send (%d calls)", n)
	}
}

// TestWordFilterAcrossInstances: two instances with the same
// moderation.blocked_words refuse on both; each process reloads its own
// configuration (SIGHUP is per process), so until every instance is
// reloaded they differ — the operator reloads them all (docs/moderation.md).
func TestWordFilterAcrossInstances(t *testing.T) {
	t.Parallel()
	nodes := startCluster(t, 2, func(_ int, c *configs.Config) {
		c.ServerAPI.Keys = []string{apiKey}
		c.Moderation = configs.Moderation{BlockedWords: []string{"spam"}, Action: configs.ModerationRefuse}
	})
	tok := modUsers(t, nodes[0].base, "ann", "bo")
	send := func(n int, id, text string) (int, map[string]any) {
		return call(t, "POST", nodes[n].base+"/msg/send", fmt.Sprintf(`{"client_msg_id":%q,"session_type":1,"recv_id":"bo","msg_type":101,"content":{"text":%q}}`, id, text), tok["ann"])
	}
	for n := range nodes {
		code, env := send(n, fmt.Sprint("r", n), "SPAM")
		refusedWord(t, fmt.Sprint("instance ", n+1), code, env, "content.text", "spam")
	}
	masked := configs.Moderation{BlockedWords: []string{"spam"}, Action: configs.ModerationMask}
	if err := nodes[0].app.SetModeration(masked); err != nil {
		t.Fatal(err)
	}
	if code, env := send(0, "m0", "spam"); code != 200 {
		t.Fatalf("instance 1 after its reload: %d %v", code, env)
	}
	code, env := send(1, "m1", "spam")
	refusedWord(t, "instance 2 before its reload", code, env, "content.text", "spam")
	if err := nodes[1].app.SetModeration(masked); err != nil {
		t.Fatal(err)
	}
	if code, env := send(1, "m2", "spam"); code != 200 {
		t.Fatalf("instance 2 after its reload: %d %v", code, env)
	}
}

// TestWordFilterReloadsOnSIGHUP runs the nexo binary with a configuration
// file naming a words file: SIGHUP after both files changed applies the
// new words and action; SIGHUP with the words file gone is logged and
// keeps the filter in force.
func TestWordFilterReloadsOnSIGHUP(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs a nexo process")
	}
	t.Parallel()
	cfg := realConfig(t) // skips, or fails under CI, without MariaDB and Redis
	dir := t.TempDir()
	bin := buildNexo(t, dir)
	words, conf := filepath.Join(dir, "words.txt"), filepath.Join(dir, "nexo.yaml")
	write := func(path, content string) {
		t.Helper()
		if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(words, "spam\n")
	write(conf, "moderation:\n  blocked_words_file: "+words+"\n  action: refuse\n")
	env := []string{
		"NEXO_MYSQL_DSN=" + cfg.MySQL.DSN, "NEXO_REDIS_ADDR=" + cfg.Redis.Addr, "NEXO_REDIS_KEY_PREFIX=" + cfg.Redis.KeyPrefix,
		"NEXO_JWT_SECRET=" + validSecret, "NEXO_AUTH_BCRYPT_COST=4", "NEXO_LOG_LEVEL=info", "NEXO_WS_RATE_LIMIT=0",
		"NEXO_SERVER_API_KEYS=" + apiKey, "NEXO_STREAMS_SHARDS=2", "NEXO_STREAMS_BLOCK=100ms",
	}
	p := startProcArgs(t, bin, "hup1", env, "--config", conf)
	tok := modUsers(t, p.base, "ann", "bo")
	bo := dial(t, p.base, "bo", tok["bo"])
	send := func(id, text string) (int, map[string]any) {
		return call(t, "POST", p.base+"/msg/send", fmt.Sprintf(`{"client_msg_id":%q,"session_type":1,"recv_id":"bo","msg_type":101,"content":{"text":%q}}`, id, text), tok["ann"])
	}
	code, env2 := send("s1", "Spam")
	refusedWord(t, "before SIGHUP", code, env2, "content.text", "spam")

	write(words, "eggs\n")
	write(conf, "moderation:\n  blocked_words_file: "+words+"\n  action: mask\n")
	if err := p.cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	for i, deadline := 0, time.Now().Add(10*time.Second); ; i++ {
		code, _ := send(fmt.Sprint("s2-", i), "Spam and EGGS")
		if code == 200 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("SIGHUP not applied within 10 s:\n%s", p.out)
		}
		time.Sleep(50 * time.Millisecond) // polling for the reload with a deadline
	}
	bo.waitPushes(2001, "the message masked by the reloaded filter", func(f []frame) bool {
		return len(f) >= 1 && textOf(f[0]) == "Spam and ****"
	})

	if err := os.Remove(words); err != nil {
		t.Fatal(err)
	}
	if err := p.cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(10 * time.Second); !strings.Contains(p.out.String(), "SIGHUP: configuration not reloaded"); {
		if time.Now().After(deadline) {
			t.Fatalf("no log of the failed reload:\n%s", p.out)
		}
		time.Sleep(50 * time.Millisecond) // polling the log with a deadline
	}
	if code, env := send("s3", "eggs"); code != 200 {
		t.Fatalf("after the failed reload: %d %v", code, env)
	}
	bo.waitPushes(2001, "still masked after the failed reload", func(f []frame) bool {
		return len(f) >= 2 && textOf(f[1]) == "****"
	})
}
