package app

import (
	"encoding/json"
	"fmt"
	"slices"
	gosync "sync"
	"testing"
	"time"

	"github.com/nexo-im/nexo/configs"
	"github.com/nexo-im/nexo/domain"
)

// TestMessageActionsOnThreeInstances: members spread over three instances
// read a group message in one burst; GET /msg/read_by on every instance
// matches the cursors, and the sender (on another instance) gets a
// read-count push over the cluster bus that counts them all. An edit made
// on one instance reaches every member's connection, on every instance,
// exactly once.
func TestMessageActionsOnThreeInstances(t *testing.T) {
	nodes := startCluster(t, 3, func(_ int, c *configs.Config) {
		c.Sync.CursorFlushInterval = 5 * time.Millisecond
		c.Sync.ReadCountInterval = 50 * time.Millisecond
	})
	const n = 9
	ids := make([]string, n)
	toks := make([]string, n)
	conns := make([]*wsClient, n)
	for i := range ids {
		ids[i] = fmt.Sprintf("m%d", i)
		base := nodes[i%3].base
		toks[i] = user(t, base, ids[i])
		conns[i] = dial(t, base, ids[i], toks[i])
	}
	members, _ := json.Marshal(ids[1:])
	code, env := call(t, "POST", nodes[0].base+"/group/create", fmt.Sprintf(`{"name":"g","member_ids":%s}`, members), toks[0])
	if code != 200 {
		t.Fatalf("create group: %d %v", code, env)
	}
	gid := dataField(env, "group_id")
	conv := domain.GroupConversationID(gid)
	r := conns[0].request(1003, map[string]any{"client_msg_id": "g1", "session_type": 3, "group_id": gid, "msg_type": 101,
		"content": map[string]any{"text": "read me"}})
	if r.ErrCode != 0 {
		t.Fatalf("send: %s", r.Data)
	}
	seq := r.field("seq").(float64)
	waitNewest(t, nodes[0].base, toks[0], conv, seq)

	// The burst: every other member marks it read, each on its own instance.
	var wg gosync.WaitGroup
	for i := 1; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if code, env := call(t, "POST", nodes[i%3].base+"/msg/mark_read", fmt.Sprintf(`{"conversation_id":%q,"seq":%d}`, conv, int64(seq)), toks[i]); code != 200 {
				t.Errorf("mark_read of %s: %d %v", ids[i], code, env)
			}
		}()
	}
	wg.Wait()
	// The sender, on n1, hears all 8 reads through one or more 2104s.
	conns[0].waitPushes(2104, "read counts reaching 8", func(f []frame) bool {
		for _, x := range f {
			counts, _ := x.field("counts").([]any)
			for _, c := range counts {
				if m := c.(map[string]any); m["seq"] == seq && m["read_count"] == float64(n-1) && m["member_count"] == float64(n-1) {
					return true
				}
			}
		}
		return false
	})
	deadline := time.Now().Add(10 * time.Second)
	for _, node := range nodes {
		for {
			_, env := call(t, "GET", fmt.Sprintf("%s/msg/read_by?conversation_id=%s&seq=%d", node.base, conv, int64(seq)), "", toks[1])
			d := envData(env)
			read, _ := d["read_user_ids"].([]any)
			got := make([]string, len(read))
			for i, u := range read {
				got[i] = u.(string)
			}
			if slices.Equal(got, ids[1:]) && d["read_count"] == float64(n-1) {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("read_by on %s: %v", node.base, d)
			}
			time.Sleep(20 * time.Millisecond) // polling the cursor flush with a deadline
		}
	}

	// An edit on n2 reaches every member's connection exactly once.
	code, env = call(t, "POST", nodes[1].base+"/msg/edit", fmt.Sprintf(`{"conversation_id":%q,"seq":%d,"content":{"text":"edited"}}`, conv, int64(seq)), toks[0])
	if code != 200 {
		t.Fatalf("edit: %d %v", code, env)
	}
	for i, c := range conns {
		f := c.waitPushes(2001, "the edit notice", func(f []frame) bool { return countMsgType(f, 1601) >= 1 })
		if got := countMsgType(f, 1601); got != 1 {
			t.Fatalf("%s got the edit notice %d times", ids[i], got)
		}
	}
}
