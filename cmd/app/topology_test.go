package app

import (
	"fmt"
	"strings"
	"testing"

	"github.com/nexo-im/nexo/configs"
	"github.com/nexo-im/nexo/domain"
	"github.com/nexo-im/nexo/store/redistest"
	"github.com/nexo-im/nexo/store/storetest"
)

// TestWholeAppOnRedisTopologies (issue 12): the whole server on a Redis
// Cluster of 3 masters and on Sentinel — register, login, connect, single
// and group chat with pushes and ACK(saved), receipts, presence, logout,
// disconnect — with no Redis error in its logs. The package tests cover
// each store on each topology; this covers what only the assembled server
// does (it found the session keys on two slots).
func TestWholeAppOnRedisTopologies(t *testing.T) {
	for _, mode := range []string{configs.RedisCluster, configs.RedisSentinel} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			// The webhooks' stream and consumer group run on the topology too.
			hooks := newReceiver(t)
			cfg := hookConfig(t, hooks, configs.EventAfterSend, configs.EventOfflinePush, configs.EventGroupChanged)
			cfg.Auth.Registration = configs.RegistrationOpen // the flow signs up through /user/register
			var prefix string
			switch mode {
			case configs.RedisCluster:
				c, err := redistest.SharedCluster()
				if err != nil {
					t.Fatalf("Redis Cluster: %v", err)
				}
				_, prefix = storetest.RedisCluster(t)
				cfg.Redis.Addrs = c.Seeds()
			default:
				s, err := redistest.SharedSentinel()
				if err != nil {
					t.Fatalf("Redis Sentinel: %v", err)
				}
				_, prefix = storetest.RedisSentinel(t)
				cfg.Redis.Addrs, cfg.Redis.MasterName = s.SentinelAddrs(), redistest.MasterName
			}
			cfg.Redis.Mode, cfg.Redis.Addr, cfg.Redis.KeyPrefix = mode, "", prefix
			cfg.Streams.Shards = 6 // two per master on the cluster
			if err := cfg.Validate(); err != nil {
				t.Fatal(err)
			}
			base, logs, stop := startApp(t, cfg)
			wholeAppFlow(t, base)
			hooks.wait("after_send of the four messages and group_changed", func(ev []hookEvent) bool {
				sent, changed := 0, false
				for _, e := range ev {
					sent += map[bool]int{true: 1}[e.Event == "after_send" && e.OK]
					changed = changed || e.Event == "group_changed"
				}
				return sent >= 4 && changed
			})
			if err := stop(); err != nil {
				t.Fatal(err)
			}
			for _, l := range strings.Split(logs.String(), "\n") {
				if strings.Contains(l, "level=ERROR") || strings.Contains(l, "CROSSSLOT") ||
					strings.Contains(l, "level=WARN") && !strings.Contains(l, "streams.shards") {
					t.Errorf("on %s the server logged: %s", mode, l)
				}
			}
		})
	}
}

// wholeAppFlow drives one of everything through base's public API.
func wholeAppFlow(t *testing.T, base string) {
	t.Helper()
	tokA, tokB, tokC := user(t, base, "ann"), user(t, base, "ben"), user(t, base, "cat")
	ann, ben, cat := dial(t, base, "ann", tokA), dial(t, base, "ben", tokB), dial(t, base, "cat", tokC)
	for i := 1; i <= 3; i++ {
		if r := ann.send("ben", fmt.Sprint("m", i), "hello"); r.ErrCode != 0 {
			t.Fatalf("send: %d %s", r.ErrCode, r.ErrMsg)
		}
	}
	ben.waitPushes(2001, "three messages", func(f []frame) bool { return len(f) >= 3 })
	ann.waitPushes(2101, "ACK(saved) of each", func(f []frame) bool { return len(ackFrames(f, "saved")) >= 3 })
	conv := domain.SingleConversationID("ann", "ben")
	if r := ben.request(1101, map[string]any{"ack_type": "ack_read", "conversation_id": conv, "seq": 3}); r.ErrCode != 0 {
		t.Fatalf("read receipt: %d %s", r.ErrCode, r.ErrMsg)
	}
	ann.waitPushes(2101, "the read receipt", func(f []frame) bool { return len(ackFrames(f, "read")) >= 1 })

	code, env := call(t, "POST", base+"/group/create", `{"name":"g","member_ids":["ben","cat"]}`, tokA)
	if code != 200 {
		t.Fatalf("group/create: %d %v", code, env)
	}
	gid := dataField(env, "group_id")
	if r := ann.request(1003, map[string]any{"client_msg_id": "g1", "session_type": 3, "group_id": gid, "msg_type": 101,
		"content": map[string]any{"text": "hi all"}}); r.ErrCode != 0 {
		t.Fatalf("group send: %d %s", r.ErrCode, r.ErrMsg)
	}
	for _, c := range []*wsClient{ben, cat} {
		c.waitPushes(2001, "the group message", func(f []frame) bool {
			for _, x := range f {
				if x.field("group_id") == gid && x.field("msg_type") == 101.0 {
					return true
				}
			}
			return false
		})
	}
	if code, env := call(t, "GET", base+"/user/presence?user_ids=ben", "", tokA); code != 200 || !strings.Contains(fmt.Sprint(env), "online:true") {
		t.Fatalf("presence of ben while connected: %d %v", code, env)
	}
	if code, env := call(t, "POST", base+"/auth/logout", "", tokC); code != 200 {
		t.Fatalf("logout: %d %v", code, env)
	}
	<-cat.closed
	if err := ben.conn.Close(); err != nil {
		t.Fatal(err)
	}
	pullAll(t, base, tokA, conv)
}
