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

// TestClusterSIGKILLActionsDeletesReadBy: deletes for everyone (alice, the
// sender) and for self (her peer) keep being made on n1 and n2 while n3 is
// SIGKILLed. Every delete answered OK has its notice saved exactly once (1603
// in the conversation, 1604 in the deleter's own conversation), no notice is
// saved twice, and the pulls on both surviving instances show the message as
// a tombstone (for everyone) or deleted (for the peer only). After the kill
// the peers mark read through the surviving instances and GET /msg/read_by
// on each of them follows those cursors.
func TestClusterSIGKILLActionsDeletesReadBy(t *testing.T) {
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
	nodes := []*nexoProc{n1, n2}

	tokA := user(t, n1.base, "dalice")
	alice := dial(t, n1.base, "dalice", tokA)
	const nConv, perConv = 8, 6
	convs := make([]string, nConv)
	peers := make([]string, nConv)
	toks := make([]string, nConv)
	seqs := make([][]int64, nConv) // alice's messages per conversation
	for i := range nConv {
		peers[i] = fmt.Sprintf("dpal%d", i)
		toks[i] = user(t, n2.base, peers[i])
		convs[i] = domain.SingleConversationID("dalice", peers[i])
		for k := range perConv {
			r := alice.send(peers[i], fmt.Sprintf("d%d-%d", i, k), "text")
			if r.ErrCode != 0 {
				t.Fatalf("send: %s", r.Data)
			}
			seqs[i] = append(seqs[i], int64(r.field("seq").(float64)))
		}
		waitNewest(t, n1.base, tokA, convs[i], float64(seqs[i][perConv-1]))
	}

	// Per conversation: seqs[0] and seqs[1] deleted for everyone by alice,
	// seqs[3] and seqs[4] for self by the peer; seqs[2] and seqs[5] stay.
	type del struct {
		conv, scope string
		seq         int64
	}
	answered := map[del]bool{}
	const total = 4 * nConv
	for i := range total {
		if i == total/3 {
			if err := n3.cmd.Process.Signal(syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			<-n3.exited
		}
		c, kind := i%nConv, i/nConv
		d := del{conv: convs[c], scope: "everyone", seq: seqs[c][kind/2]}
		tok, node := tokA, nodes[kind%2]
		if kind%2 == 1 {
			d = del{conv: convs[c], scope: "self", seq: seqs[c][3+kind/2]}
			tok = toks[c]
		}
		code, resp := call(t, "POST", node.base+"/msg/delete", fmt.Sprintf(`{"conversation_id":%q,"seqs":[%d],"scope":%q}`, d.conv, d.seq, d.scope), tok)
		switch code {
		case 200:
			answered[d] = true
		case 503:
		default:
			t.Fatalf("delete %d %+v: %d %v", i, d, code, resp)
		}
	}
	waitOwners(t, n1.base, []string{"n1", "n2"}, shards, "after n3's SIGKILL")
	t.Logf("%d of %d deletes answered OK", len(answered), total)
	if len(answered) < total/2 {
		t.Fatalf("only %d of %d deletes answered OK", len(answered), total)
	}

	// notices counts the delete notices of msgType saved in own (pulled with
	// token on base) per deleted seq of conv.
	notices := func(base, token, own string, msgType float64) map[del]int {
		out := map[del]int{}
		for _, m := range pullAll(t, base, token, own) {
			if m["msg_type"] != msgType {
				continue
			}
			content, _ := m["content"].(map[string]any)
			raw, _ := json.Marshal(content["custom"])
			var n struct {
				ConversationID string  `json:"conversation_id"`
				Seqs           []int64 `json:"seqs"`
				Scope          string  `json:"scope"`
			}
			_ = json.Unmarshal(raw, &n)
			for _, s := range n.Seqs {
				out[del{conv: n.ConversationID, scope: n.Scope, seq: s}]++
			}
		}
		return out
	}
	// status returns the status of seq in conv as pulled with token on base.
	status := func(msgs []map[string]any, seq int64) any {
		for _, m := range msgs {
			if m["seq"] == float64(seq) {
				return m["status"]
			}
		}
		return "missing"
	}
	deadline := time.Now().Add(60 * time.Second)
	for c, conv := range convs {
		for _, node := range nodes {
			for {
				problem := ""
				everyone := notices(node.base, tokA, conv, 1603)
				self := notices(node.base, toks[c], domain.SingleConversationID(peers[c], peers[c]), 1604)
				byAlice := pullAll(t, node.base, tokA, conv)
				byPeer := pullAll(t, node.base, toks[c], conv)
				for k, seq := range seqs[c] {
					d := del{conv: conv, scope: "everyone", seq: seq}
					counts := everyone
					if k >= 3 {
						d.scope, counts = "self", self
					}
					switch n := counts[d]; {
					case n > 1:
						t.Fatalf("%s on %s: notice for %+v saved %d times", conv, node.base, d, n)
					case answered[d] && n != 1:
						problem = fmt.Sprintf("no notice for answered %+v", d)
					}
					if !answered[d] {
						continue
					}
					if d.scope == "everyone" && (status(byAlice, seq) != "deleted" || status(byPeer, seq) != "deleted") {
						problem = fmt.Sprintf("seq %d not a tombstone: alice %v, peer %v", seq, status(byAlice, seq), status(byPeer, seq))
					}
					if d.scope == "self" && (status(byPeer, seq) != "deleted" || status(byAlice, seq) == "deleted") {
						problem = fmt.Sprintf("seq %d deleted for self: alice %v, peer %v", seq, status(byAlice, seq), status(byPeer, seq))
					}
				}
				if problem == "" {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("%s on %s: %s", conv, node.base, problem)
				}
				time.Sleep(100 * time.Millisecond) // polling the saved state with a deadline
			}
		}
	}

	// Read cursors after the kill: each peer reads up to seqs[2] through a
	// surviving instance; read_by of seqs[2] lists it as read, of seqs[5] as
	// unread, on both.
	for c, conv := range convs {
		for {
			code, resp := call(t, "POST", nodes[c%2].base+"/msg/mark_read", fmt.Sprintf(`{"conversation_id":%q,"seq":%d}`, conv, seqs[c][2]), toks[c])
			if code == 200 {
				break
			}
			if code != 503 || time.Now().After(deadline) {
				t.Fatalf("mark_read of %s: %d %v", conv, code, resp)
			}
			time.Sleep(100 * time.Millisecond) // retrying a busy answer with a deadline
		}
	}
	for c, conv := range convs {
		for _, node := range nodes {
			for {
				_, r2 := call(t, "GET", fmt.Sprintf("%s/msg/read_by?conversation_id=%s&seq=%d", node.base, conv, seqs[c][2]), "", tokA)
				_, r5 := call(t, "GET", fmt.Sprintf("%s/msg/read_by?conversation_id=%s&seq=%d", node.base, conv, seqs[c][5]), "", tokA)
				d2, d5 := envData(r2), envData(r5)
				read2, _ := d2["read_user_ids"].([]any)
				unread5, _ := d5["unread_user_ids"].([]any)
				if d2["read_count"] == 1.0 && d2["member_count"] == 1.0 && len(read2) == 1 && read2[0] == peers[c] &&
					d5["read_count"] == 0.0 && len(unread5) == 1 && unread5[0] == peers[c] {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("read_by in %s on %s: seq %d %v, seq %d %v", conv, node.base, seqs[c][2], d2, seqs[c][5], d5)
				}
				time.Sleep(50 * time.Millisecond) // polling the cursor flush with a deadline
			}
		}
	}
}
