package streams_test

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/nexo-im/nexo/store/storetest"
	"github.com/nexo-im/nexo/streams"
)

// startClusterNode starts a one-node Redis Cluster (all 16384 slots on one
// redis-server on a free loopback port) and returns a cluster client.
func startClusterNode(t *testing.T) *redis.ClusterClient {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("CI=true: redis-server not installed; the cluster-safety test needs it")
		}
		t.Skip("redis-server not installed; install it to run the cluster-safety test")
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	_ = l.Close()
	dir := t.TempDir()
	cmd := exec.Command(bin, "--port", fmt.Sprint(port), "--bind", "127.0.0.1", "--cluster-enabled", "yes",
		"--cluster-config-file", dir+"/nodes.conf", "--save", "", "--appendonly", "no", "--dir", dir)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	node := redis.NewClient(&redis.Options{Addr: addr})
	defer node.Close()
	ctx := context.Background()
	deadline := time.Now().Add(10 * time.Second)
	for node.Ping(ctx).Err() != nil {
		if time.Now().After(deadline) {
			t.Fatal("cluster node did not start")
		}
		time.Sleep(20 * time.Millisecond) // polling a child process's startup, not synchronising our code
	}
	if err := node.Do(ctx, "CLUSTER", "ADDSLOTSRANGE", 0, 16383).Err(); err != nil {
		t.Fatal(err)
	}
	for {
		info, _ := node.ClusterInfo(ctx).Result()
		if strings.Contains(info, "cluster_state:ok") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("cluster not ok: %s", info)
		}
		time.Sleep(20 * time.Millisecond)
	}
	cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{addr}})
	t.Cleanup(func() { _ = cc.Close() })
	return cc
}

func TestAcceptAndCommitRunOnRedisCluster(t *testing.T) {
	cc := startClusterNode(t)
	ctx := context.Background()
	// The node really enforces slots: a script touching keys without a
	// shared hash tag fails with CROSSSLOT.
	err := redis.NewScript(`redis.call('SET', KEYS[1], 1); redis.call('SET', KEYS[2], 1); return 1`).
		Run(ctx, cc, []string{"a:{s1}:x", "a:{s2}:y"}).Err()
	if err == nil || !strings.Contains(err.Error(), "CROSSSLOT") {
		t.Fatalf("expected CROSSSLOT from keys of two tags, got %v", err)
	}

	prefix := storetest.RandomName("c")
	f := newFixtureOn(t, cc, prefix, 10)
	queue := prefix + ":{search}:index" // another slot than any shard's
	for i := 0; i < 25; i++ {
		m := msg("alice", fmt.Sprint("bob", i%5), fmt.Sprint("m", i))
		route := streams.SaveFirst
		if i%2 == 1 {
			route = streams.DeliverFirst
		}
		if _, err := f.acc.Accept(ctx, streams.AcceptRequest{Msg: m, Route: route, Append: true}); err != nil {
			t.Fatalf("accept on cluster: %v", err)
		}
	}
	appended := 0
	for shard := 0; shard < f.keys.Shards(); shard++ {
		in := f.keys.ToSave(shard)
		if err := streams.EnsureGroup(ctx, cc, in, streams.GroupSave); err != nil {
			t.Fatal(err)
		}
		res, err := cc.XReadGroup(ctx, &redis.XReadGroupArgs{Group: streams.GroupSave, Consumer: "c1", Streams: []string{in, ">"}, Count: 100, Block: -1}).Result()
		if err == redis.Nil || len(res) == 0 {
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		var ids []string
		var next []streams.Entry
		var idem []streams.IdemSaved
		for _, x := range res[0].Messages {
			e, err := streams.Decode(x)
			if err != nil {
				t.Fatal(err)
			}
			ids = append(ids, x.ID)
			next = append(next, e)
			idem = append(idem, streams.IdemSaved{Key: f.keys.Idem(shard, e.Msg.SenderID, e.Msg.ClientMsgID)})
		}
		c := streams.Commit{Input: in, Group: streams.GroupSave, Ack: ids, Next: f.keys.ToDeliver(shard), ToNext: next,
			Dead: f.keys.Dead(shard), MarkSaved: idem,
			Appends: []streams.Append{{Stream: queue, Values: []any{"doc", fmt.Sprint(shard)}}}}
		if err := c.Apply(ctx, cc); err != nil {
			t.Fatalf("commit on cluster: %v", err)
		}
		appended++
	}
	// The appends live in another slot: they went on their own, before
	// each commit, and every one arrived.
	if n, err := cc.XLen(ctx, queue).Result(); err != nil || n != int64(appended) || appended == 0 {
		t.Fatalf("appends on cluster: XLEN %d (%v), want %d", n, err, appended)
	}
}
