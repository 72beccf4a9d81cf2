package app

import (
	"encoding/json"
	"fmt"
	"syscall"
	"testing"
	"time"

	"github.com/nexo-im/nexo/domain"
)

// TestClusterSIGKILLActions: edits and reactions keep being made on n1 and
// n2 while n3, which owns some shards, is SIGKILLed; every action that was
// answered OK has its notification saved exactly once in its conversation,
// and the message ends at the last edit with the reactions counted.
func TestClusterSIGKILLActions(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs three nexo processes")
	}
	t.Parallel()
	cfg := realConfig(t)
	bin := buildNexo(t, t.TempDir())
	const shards = 8
	env := []string{
		"NEXO_MYSQL_DSN=" + cfg.MySQL.DSN, "NEXO_REDIS_ADDR=" + cfg.Redis.Addr, "NEXO_REDIS_KEY_PREFIX=" + cfg.Redis.KeyPrefix,
		"NEXO_JWT_SECRET=" + validSecret, "NEXO_AUTH_BCRYPT_COST=4", "NEXO_ADMIN_TOKEN=admin-token", "NEXO_LOG_LEVEL=warn",
		"NEXO_WS_RATE_LIMIT=0", "NEXO_LIMITS_LOGIN_IP_RATE=0", "NEXO_LIMITS_REGISTER_IP_RATE=0", "NEXO_HTTP_MAX_CONNS_PER_IP=0",
		fmt.Sprintf("NEXO_STREAMS_SHARDS=%d", shards), "NEXO_STREAMS_BLOCK=100ms", "NEXO_STREAMS_CLAIM_MIN_IDLE=2s",
		"NEXO_CLUSTER_HEARTBEAT_INTERVAL=250ms", "NEXO_CLUSTER_INSTANCE_TTL=3s",
	}
	n1, n2, n3 := startProc(t, bin, "n1", env), startProc(t, bin, "n2", env), startProc(t, bin, "n3", env)
	waitOwners(t, n1.base, []string{"n1", "n2", "n3"}, shards, "three instances started")

	tokA := user(t, n1.base, "alice")
	alice := dial(t, n1.base, "alice", tokA)
	const nConv = 8
	convs := make([]string, nConv)
	toks := make([]string, nConv)
	seqs := make([]float64, nConv)
	for i := range nConv {
		peer := fmt.Sprintf("pal%d", i)
		toks[i] = user(t, n2.base, peer)
		convs[i] = domain.SingleConversationID("alice", peer)
		r := alice.send(peer, fmt.Sprint("base", i), "v0")
		if r.ErrCode != 0 {
			t.Fatalf("send: %s", r.Data)
		}
		seqs[i] = r.field("seq").(float64)
		waitNewest(t, n1.base, tokA, convs[i], seqs[i])
	}

	emojis := []string{"👍", "🎉", "❤️", "😂", "🔥", "👀", "🙏", "✅"}
	const total = 96             // 6 edits and 6 reactions per conversation: fewer than len(emojis)
	edits := make([]int, nConv)  // answered edits per conversation
	reacts := make([]int, nConv) // answered reactions per conversation, each a new emoji
	for i := range total {
		if i == total/3 {
			if err := n3.cmd.Process.Signal(syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			<-n3.exited
		}
		c := (i / 2) % nConv // each conversation: an edit, then a reaction
		var code int
		var resp map[string]any
		if i%2 == 0 {
			code, resp = call(t, "POST", n1.base+"/msg/edit", fmt.Sprintf(`{"conversation_id":%q,"seq":%d,"content":{"text":"v%d"}}`, convs[c], int64(seqs[c]), i), tokA)
			if code == 200 {
				edits[c]++
			}
		} else {
			code, resp = call(t, "POST", n2.base+"/msg/reaction", fmt.Sprintf(`{"conversation_id":%q,"seq":%d,"emoji":%q,"op":"add"}`, convs[c], int64(seqs[c]), emojis[reacts[c]]), toks[c])
			if code == 200 {
				reacts[c]++
			}
		}
		if code != 200 && code != 503 {
			t.Fatalf("action %d: %d %v", i, code, resp)
		}
	}
	waitOwners(t, n1.base, []string{"n1", "n2"}, shards, "after n3's SIGKILL")

	deadline := time.Now().Add(60 * time.Second)
	for c, conv := range convs {
		for {
			msgs := pullAll(t, n1.base, tokA, conv)
			versions := map[float64]int{}
			reactions := map[string]int{}
			var base map[string]any
			for _, m := range msgs {
				if m["seq"] == seqs[c] {
					base = m
				}
				content, _ := m["content"].(map[string]any)
				raw, _ := json.Marshal(content["custom"])
				var n map[string]any
				_ = json.Unmarshal(raw, &n)
				switch m["msg_type"] {
				case 1601.0:
					versions[n["edit_version"].(float64)]++
				case 1602.0:
					reactions[n["emoji"].(string)]++
				}
			}
			complete := len(versions) == edits[c] && len(reactions) == reacts[c] && base != nil &&
				base["edit_version"] == float64(edits[c])
			for _, k := range versions {
				complete = complete && k == 1
			}
			for _, k := range reactions {
				complete = complete && k == 1
			}
			if complete {
				if got, _ := base["reactions"].([]any); len(got) != reacts[c] {
					t.Fatalf("%s: %d reactions pulled, %d answered", conv, len(got), reacts[c])
				}
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: edit notices %v (answered %d), reaction notices %v (answered %d), message %v",
					conv, versions, edits[c], reactions, reacts[c], base)
			}
			time.Sleep(100 * time.Millisecond) // polling the saved state with a deadline
		}
	}
}
