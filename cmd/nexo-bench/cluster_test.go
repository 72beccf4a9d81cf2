package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nexo-im/nexo/store/storetest"
	"github.com/nexo-im/nexo/streams"
)

// TestSessionsSpreadByIndex: a --url list places session k on instance
// k mod n whatever order the sessions dial in, so a pair's two consecutive
// sessions never share an instance; a session placed by the topology
// keeps its instance.
func TestSessionsSpreadByIndex(t *testing.T) {
	a := newAPI("http://a:1, http://b:2/ ,http://c:3")
	want := []string{"ws://a:1/ws?", "ws://b:2/ws?", "ws://c:3/ws?"}
	for _, idx := range []int{4, 0, 5, 2, 1, 3} { // not in order, as parallel dials are
		c := &conn{idx: idx, user: "u", token: "t", platform: 5}
		if got := a.wsURL(c); !strings.HasPrefix(got, want[idx%3]) {
			t.Fatalf("session %d went to %s, want %s…", idx, got, want[idx%3])
		}
	}
	c := &conn{idx: 0, user: "u", token: "t", platform: 5, base: "https://z:9/"}
	if got := a.wsURL(c); !strings.HasPrefix(got, "wss://z:9/ws?") || !strings.Contains(got, "token=t") {
		t.Fatalf("placed session went to %s", got)
	}
}

// TestShardOfIsTheServersRule: the placements rely on computing a
// conversation's shard as the server does.
func TestShardOfIsTheServersRule(t *testing.T) {
	for _, shards := range []int{1, 3, 8, 16} {
		k := streams.NewKeys("x", shards)
		for i := range 50 {
			conv := singleConversationID(fmt.Sprintf("nb1-s%d", i), fmt.Sprintf("nb1-r%d", i))
			if got, want := shardOf(conv, shards), k.Shard(conv); got != want {
				t.Fatalf("shardOf(%s, %d) = %d, the server says %d", conv, shards, got, want)
			}
		}
	}
}

func TestBalanced(t *testing.T) {
	cases := []struct {
		owners    map[int][]int
		instances int
		want      bool
	}{
		{map[int][]int{0: {0}, 1: {1}, 2: {2}, 3: {0}, 4: {1}, 5: {2}, 6: {0}, 7: {1}}, 3, true},
		{map[int][]int{0: {0}, 1: {0}, 2: {0}, 3: {0}, 4: {1}, 5: {2}, 6: {1}, 7: {2}}, 3, false},    // 4 > ceil(8/3)
		{map[int][]int{0: {0}, 1: {1}, 2: {0}, 3: {1}, 4: {0}, 5: {1}, 6: {0}}, 2, false},            // shard 7 unowned
		{map[int][]int{0: {0, 1}, 1: {1}, 2: {0}, 3: {1}, 4: {0}, 5: {1}, 6: {0}, 7: {1}}, 2, false}, // shard 0 twice
		{map[int][]int{0: {0}, 1: {0}, 2: {0}, 3: {0}, 4: {0}, 5: {0}, 6: {0}, 7: {0}}, 2, false},    // one idle instance
		{map[int][]int{0: {0}, 1: {0}, 2: {0}, 3: {0}, 4: {0}, 5: {0}, 6: {0}, 7: {0}}, 1, true},
	}
	for i, tc := range cases {
		if got := balanced(tc.owners, 8, tc.instances); got != tc.want {
			t.Errorf("case %d: balanced = %v, want %v", i, got, tc.want)
		}
	}
}

// TestClusterResultInResults: summarize reads a cluster step and writes
// its section, targets included; a missing push fails the step.
func TestClusterResultInResults(t *testing.T) {
	dir := t.TempDir()
	run := func(name string, p99 float64) Result {
		return Result{Name: name, Params: Params{Rate: 1000, Pairs: 100},
			Throughput: Throughput{Saved: 1000}, Usage: Usage{ProcessCores: 0.5},
			Latency: Latencies{Delivery: Percentiles{P50: 1, P99: p99}}}
	}
	comp := run("cluster-completeness", 9)
	comp.Counts = Counts{Accepted: 1000, Saved: 1000, ExpectedDeliveries: 1000, Delivered: 1000}
	c := &ClusterResult{Tool: "nexo-bench", Schema: 1, Name: "cluster", Instances: 3, Bus: "redis", Shards: 8,
		CPU:          []ClusterCPU{cpuOf(1, ptr(run("cpu-1", 5))), cpuOf(2, ptr(run("cpu-2", 6))), cpuOf(3, ptr(run("cpu-3", 7)))},
		Latency:      &CompareResult{Name: "cluster-latency", A: CompareSide{Runs: []Result{run("a", 4)}}, B: CompareSide{Runs: []Result{run("b", 4.6)}}},
		Completeness: completenessOf(&comp, map[string]float64{`nexo_cluster_envelopes_sent_total{kind="push"}`: 3000}),
		Propagation: Propagation{LimitS: 10,
			Kick:   EventLatency{Samples: 100, Latency: Percentiles{P50: 1, P99: 3, Max: 4}},
			Logout: EventLatency{Samples: 100, Latency: Percentiles{P50: 0.5, P99: 2, Max: 2}}},
	}
	c.Latency.A.Median, c.Latency.B.Median = medians(c.Latency.A.Runs), medians(c.Latency.B.Runs)
	c.CrossMinusLocalP99 = round3(c.Latency.B.Median["delivery_p99_ms"] - c.Latency.A.Median["delivery_p99_ms"])
	c.OK = c.ok()
	if !c.OK || c.CPU[0].CPUPer1k != 0.5 {
		t.Fatalf("a clean result: ok %v, CPU per 1,000 %v", c.OK, c.CPU[0].CPUPer1k)
	}
	if err := writeJSON(filepath.Join(dir, "cluster.json"), c); err != nil {
		t.Fatal(err)
	}
	idx := SuiteIndex{Tool: "nexo-bench", Schema: 1, StartedAt: "2026-11-23T00:00:00Z", Command: "nexo-bench suite --only cluster",
		Entries: []SuiteEntry{{Kind: "cluster", Name: "cluster", Title: "cluster", File: "cluster.json", HTML: "cluster.html", OK: true}}}
	if err := writeJSON(filepath.Join(dir, "suite.json"), &idx); err != nil {
		t.Fatal(err)
	}
	if err := summarize(dir, "", io.Discard); err != nil {
		t.Fatal(err)
	}
	md, err := os.ReadFile(filepath.Join(dir, "results.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"## Cluster\n\n3 in-process instances",
		"| push completeness 100 % at 1,000 msg/s over 3 instances | 2001 message push to the receiver 1,000 / 1,000; ACK(saved) to the sender 1,000 / 1,000; 0 correctness failures",
		"delivery p99 4.60 ms cross vs 4.00 ms local: +0.600 ms (medians of 1 alternating runs) | ✓ |",
		"kick p99 3.00 ms, logout p99 2.00 ms (100 samples each; 0 not closed within 10 s) | ✓ |",
		"| 3 | 1,000 | 1,000 | 0.500 | 0.500 | 0 |",
	} {
		if !strings.Contains(string(md), want) {
			t.Errorf("results.md lacks %q:\n%s", want, md)
		}
	}

	c.Completeness.Kinds[0].Received--
	if c.ok() {
		t.Fatal("a missing push must fail the step")
	}
	c.Completeness.Kinds[0].Received++
	c.Propagation.Logout.NotClosed = 1
	if c.ok() {
		t.Fatal("a session event that never closed its session must fail the step")
	}
}

func ptr[T any](v T) *T { return &v }

// TestBenchClusterSharesOnePrefix starts two instances on one key prefix:
// they split the shards, a session event crosses them, stopping one leaves
// the shared keys to the other, and closing the cluster deletes them.
func TestBenchClusterSharesOnePrefix(t *testing.T) {
	dsn := storetest.MySQLDSN(t)
	rdb, _ := storetest.Redis(t) // skips (or fails under CI) when Redis is unreachable
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c := newBenchCluster(serverOptions{MySQLDSN: dsn, RedisAddr: storetest.RedisAddr(t)}, io.Discard)
	t.Cleanup(func() { _ = c.Close() })
	for range 2 {
		if err := c.add(ctx); err != nil {
			t.Fatal(err)
		}
	}
	p, err := propagation(ctx, c, 4)
	if err != nil {
		t.Fatal(err)
	}
	if p.Kick.Samples != 4 || p.Kick.NotClosed != 0 || p.Logout.Samples != 4 || p.Logout.NotClosed != 0 {
		t.Fatalf("session events across two instances: %+v", p)
	}
	keys := func() int {
		n, err := rdb.Keys(ctx, c.prefix+":*").Result()
		if err != nil {
			t.Fatal(err)
		}
		return len(n)
	}
	if keys() == 0 {
		t.Fatal("the instances wrote no key under the shared prefix")
	}
	if err := c.nodes[1].Close(); err != nil {
		t.Fatal(err)
	}
	if keys() == 0 {
		t.Fatal("stopping one instance deleted the keys the other still uses")
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if n := keys(); n != 0 {
		t.Fatalf("%d keys left under %s after the cluster closed", n, c.prefix)
	}
}
