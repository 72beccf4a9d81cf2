package app

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/nexo-im/nexo/configs"
	"github.com/nexo-im/nexo/domain"
	"github.com/nexo-im/nexo/gateway/wire"
)

// natsURL is the NATS JetStream every development and CI machine runs
// (127.0.0.1:4222, NEXO_TEST_NATS_URL to override). Unreachable: skipped,
// or a failure under CI=true.
func natsURL(t *testing.T) string {
	t.Helper()
	url, addr := "nats://127.0.0.1:4222", "127.0.0.1:4222"
	if v := os.Getenv("NEXO_TEST_NATS_URL"); v != "" {
		url, addr = v, v[len("nats://"):]
	}
	c, err := net.DialTimeout("tcp", addr, 2*time.Second)
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("NATS at %s unreachable under CI=true: %v", addr, err)
		}
		t.Skipf("NATS at %s unreachable: %v", addr, err)
	}
	_ = c.Close()
	return url
}

// TestClusterRoutesEveryPush: three instances, clients spread over them;
// every kind of live push reaches every connection exactly once, whichever
// instance did the work, and session events cross instances in under 1 s.
// Run on both buses.
func TestClusterRoutesEveryPush(t *testing.T) {
	for _, bus := range []string{configs.BusRedis, configs.BusNATS} {
		t.Run(bus, func(t *testing.T) {
			t.Parallel()
			var url string
			if bus == configs.BusNATS {
				url = natsURL(t)
			}
			nodes := startCluster(t, 3, func(_ int, c *configs.Config) {
				c.Cluster.Bus = bus
				if url != "" {
					c.Cluster.NATSURL = url
				}
			})
			clusterPushes(t, nodes)
			clusterSessionEvents(t, nodes)
		})
	}
}

// perConn counts a connection's 2001 frames by (conversation_id, seq).
func perConn(c *wsClient) map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := map[string]int{}
	for _, f := range c.pushes[2001] {
		n[fmt.Sprint(f.field("conversation_id"), "/", f.field("seq"))]++
	}
	return n
}

func countMsgType(f []frame, typ float64) int {
	n := 0
	for _, x := range f {
		if x.field("msg_type") == typ {
			n++
		}
	}
	return n
}

func clusterPushes(t *testing.T, nodes []*testInstance) {
	n1, n2, n3 := nodes[0].base, nodes[1].base, nodes[2].base
	tokA, tokB, tokC, tokD := user(t, n1, "alice"), user(t, n2, "bob"), user(t, n3, "carol"), user(t, n1, "dave")
	_, env := call(t, "POST", n3+"/auth/login", fmt.Sprintf(`{"user_id":"alice","password":%q,"platform_id":1}`, testPassword), "")
	tokAiOS := dataField(env, "token")
	alice := dial(t, n1, "alice", tokA)
	aliceIOS := dialPlatform(t, n3, "alice", tokAiOS, 1)
	bob := dial(t, n2, "bob", tokB)
	carol := dial(t, n3, "carol", tokC)
	dave := dial(t, n2, "dave", tokD)
	conns := []*wsClient{alice, aliceIOS, bob, carol, dave}

	// Single chat: alice on n1 to bob on n2; alice's iPhone on n3 gets the
	// copy, both of alice's connections get ACK(saved).
	const single = 10
	ab := domain.SingleConversationID("alice", "bob")
	for i := 1; i <= single; i++ {
		if r := alice.send("bob", fmt.Sprint("s", i), "hi"); r.ErrCode != 0 {
			t.Fatalf("send: %s", r.Data)
		}
	}
	for _, c := range []*wsClient{bob, aliceIOS} {
		c.waitPushes(2001, "single-chat messages", func(f []frame) bool { return len(f) >= single })
	}
	for _, c := range []*wsClient{alice, aliceIOS} {
		c.waitPushes(2101, "ACK(saved) for every message", func(f []frame) bool { return len(ackFrames(f, "saved")) >= single })
	}

	// Read receipt from bob (n2) reaches both of alice's connections.
	if r := bob.request(1101, map[string]any{"ack_type": "ack_read", "conversation_id": ab, "seq": single}); r.ErrCode != 0 {
		t.Fatalf("1101: %s", r.Data)
	}
	for _, c := range []*wsClient{alice, aliceIOS} {
		c.waitPushes(2101, "the read receipt", func(f []frame) bool { return len(ackFrames(f, "read")) >= 1 })
	}

	// Recall by alice (n1): the 1600 notice reaches bob (n2) and alice's iPhone (n3).
	if r := alice.request(1102, map[string]any{"conversation_id": ab, "seq": 1}); r.ErrCode != 0 {
		t.Fatalf("1102: %s", r.Data)
	}
	for _, c := range []*wsClient{bob, aliceIOS} {
		c.waitPushes(2001, "the recall notice", func(f []frame) bool { return countMsgType(f, 1600) >= 1 })
	}

	// Group: created on n1; the notice reaches every member's connection.
	code, env := call(t, "POST", n1+"/group/create", `{"name":"g","member_ids":["bob","carol","dave"]}`, tokA)
	if code != 200 {
		t.Fatalf("create group: %d %v", code, env)
	}
	gid := dataField(env, "group_id")
	for _, c := range conns {
		c.waitPushes(2001, "group_created", func(f []frame) bool { return countMsgType(f, 1501) >= 1 })
	}
	const groupMsgs = 5
	for i := 1; i <= groupMsgs; i++ {
		r := carol.request(1003, map[string]any{"client_msg_id": fmt.Sprint("g", i), "session_type": 3, "group_id": gid,
			"msg_type": 101, "content": map[string]any{"text": "hey"}})
		if r.ErrCode != 0 {
			t.Fatalf("group send: %s", r.Data)
		}
	}
	for _, c := range []*wsClient{alice, aliceIOS, bob, dave} {
		c.waitPushes(2001, "group messages", func(f []frame) bool { return countMsgType(f, 101) >= groupMsgs+countSingle(c) })
	}

	// Group kick (n1): dave (n2) gets the notice, then no more of the group.
	if code, env := call(t, "POST", n1+"/group/kick", fmt.Sprintf(`{"group_id":%q,"user_ids":["dave"]}`, gid), tokA); code != 200 {
		t.Fatalf("kick: %d %v", code, env)
	}
	dave.waitPushes(2001, "member_kicked", func(f []frame) bool { return countMsgType(f, 1505) >= 1 })
	r := carol.request(1003, map[string]any{"client_msg_id": "after-kick", "session_type": 3, "group_id": gid,
		"msg_type": 101, "content": map[string]any{"text": "dave is gone"}})
	if r.ErrCode != 0 {
		t.Fatalf("group send after kick: %s", r.Data)
	}
	afterKick := fmt.Sprint("sg_", gid, "/", r.field("seq"))
	bob.waitPushes(2001, "the message after the kick", func([]frame) bool { return perConn(bob)[afterKick] == 1 })
	alice.waitPushes(2001, "the message after the kick", func([]frame) bool { return perConn(alice)[afterKick] == 1 })

	// Exactly once per connection: no (conversation, seq) twice, and the
	// kicked member never saw the message after the kick.
	for _, c := range conns {
		for k, n := range perConn(c) {
			if n != 1 {
				t.Errorf("%s got %s %d times", c.userID, k, n)
			}
		}
	}
	if perConn(dave)[afterKick] != 0 {
		t.Error("dave got a group message after he was kicked")
	}
	if got := len(perConn(bob)); got < single+1+1+groupMsgs+1 {
		t.Errorf("bob got %d distinct messages", got)
	}
}

// countSingle is how many 101 messages c got in single chats (alice's and
// bob's connections got the single-chat run before the group messages).
func countSingle(c *wsClient) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, f := range c.pushes[2001] {
		if f.field("msg_type") == 101.0 && f.field("session_type") == 1.0 {
			n++
		}
	}
	return n
}

func clusterSessionEvents(t *testing.T, nodes []*testInstance) {
	n1, n2, n3 := nodes[0].base, nodes[1].base, nodes[2].base

	// Login policy (single_per_platform): a second web connection on n2
	// kicks the one on n1 with 2002.
	tokE := user(t, n1, "erin")
	old := dial(t, n1, "erin", tokE)
	dial(t, n2, "erin", tokE)
	propagation(t, nodes, "login-policy kick across instances", old.closed)
	if k := pushesOf(old, 2002); len(k) != 1 || k[0].field("reason") != "kicked" {
		t.Fatalf("kicked connection got %v", k)
	}

	// Logout on n3 ends the session on n2.
	tokF := user(t, n1, "frank")
	f := dial(t, n2, "frank", tokF)
	if code, env := call(t, "POST", n3+"/auth/logout", "", tokF); code != 200 {
		t.Fatalf("logout: %d %v", code, env)
	}
	propagation(t, nodes, "logout across instances", f.closed)
	if e := pushesOf(f, 3001); len(e) != 1 || e[0].field("reason") != "session_invalid" {
		t.Fatalf("logged-out connection got %v", e)
	}

	// Refresh on n1 ends the session opened with the old token on n3.
	tokG := user(t, n1, "gina")
	g := dial(t, n3, "gina", tokG)
	if code, env := call(t, "POST", n1+"/auth/refresh", "", tokG); code != 200 {
		t.Fatalf("refresh: %d %v", code, env)
	}
	propagation(t, nodes, "refresh revocation across instances", g.closed)

	// Disconnect a user everywhere (the server API's user disable).
	tokH := user(t, n1, "hank")
	h1, h3 := dial(t, n1, "hank", tokH), dialPlatform(t, n3, "hank", loginOn(t, n3, "hank", 2), 2)
	nodes[1].app.DisconnectUser(context.Background(), "hank", wire.NewError(wire.ReasonSessionInvalid, "the account was disabled"))
	propagation(t, nodes, "disconnect on n1", h1.closed)
	propagation(t, nodes, "disconnect on n3", h3.closed)

	// GET /admin/cluster on any instance lists all three.
	code, env := call(t, "GET", n2+"/admin/cluster", "", "admin-token")
	ins, _ := envData(env)["instances"].([]any)
	if code != 200 || len(ins) != 3 || envData(env)["self"] != "n2" {
		t.Fatalf("GET /admin/cluster: %d %v", code, env)
	}
	for _, x := range ins {
		m := x.(map[string]any)
		if m["instance_id"] == "" || m["last_heartbeat"] == 0.0 || m["shards"] == nil {
			t.Fatalf("instance entry %v", m)
		}
	}
	if code, _ := call(t, "GET", n2+"/admin/cluster", "", "wrong"); code != 403 {
		t.Fatalf("GET /admin/cluster with a wrong token: %d", code)
	}
}

// loginOn logs userID in on platform and returns the token.
func loginOn(t *testing.T, base, userID string, platform int) string {
	t.Helper()
	code, env := call(t, "POST", base+"/auth/login", fmt.Sprintf(`{"user_id":%q,"password":%q,"platform_id":%d}`, userID, testPassword, platform), "")
	if code != 200 {
		t.Fatalf("login %s on %d: %d %v", userID, platform, code, env)
	}
	return dataField(env, "token")
}

// pushesOf is a copy of c's pushes of identifier id.
func pushesOf(c *wsClient, id int) []frame {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]frame(nil), c.pushes[id]...)
}

// TestShutdownDrainsForTheLoadBalancer: from the moment shutdown begins
// /readyz answers 503 while the instance still serves (cluster.drain_delay),
// then WebSocket clients get close 1012 and the instance leaves the
// membership at once.
func TestShutdownDrainsForTheLoadBalancer(t *testing.T) {
	t.Parallel()
	nodes := startCluster(t, 2, func(i int, c *configs.Config) {
		if i == 0 {
			c.Cluster.DrainDelay = 2 * time.Second
		}
	})
	n1 := nodes[0]
	c := dial(t, n1.base, "zoe", user(t, n1.base, "zoe"))
	stopped := make(chan struct{})
	began := time.Now()
	go func() { _ = n1.stop(); close(stopped) }()

	deadline := time.Now().Add(2 * time.Second)
	for {
		code, env := call(t, "GET", n1.base+"/readyz", "", "")
		if code == 503 && env["err_msg"] == "server_busy" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("/readyz during the drain: %d %v", code, env)
		}
		time.Sleep(10 * time.Millisecond) // polling with a deadline
	}
	select {
	case <-c.closed:
		if time.Since(began) < 1500*time.Millisecond {
			t.Fatal("the WebSocket closed before the drain delay ended")
		}
	default:
	}
	within(t, 10*time.Second, "close after the drain", c.closed)
	var ce *websocket.CloseError
	if !errors.As(c.readErr(), &ce) || ce.Code != 1012 {
		t.Fatalf("close: %v, want 1012", c.readErr())
	}
	within(t, 10*time.Second, "shutdown", stopped)
	if err := nodes[1].app.member.Refresh(context.Background()); err != nil {
		t.Fatal(err)
	}
	if live := nodes[1].app.member.Live(); len(live) != 1 || live[0].ID != "n2" {
		t.Fatalf("live after n1 left: %+v", live)
	}
}
