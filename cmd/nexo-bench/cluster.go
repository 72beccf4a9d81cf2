package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"strings"
	"time"
)

// The cluster step (the targets of docs/cluster.md): in-process Nexo instances on the
// suite's database and Redis, sharing one key prefix (so one cluster: one
// membership, one set of shard leases, one presence set) and each with its
// own cluster.instance_id. It measures, in this order:
//
//  1. CPU per 1,000 messages at 1, 2 and 3 instances (instances are added
//     one by one, each run after the shards have spread over them);
//  2. delivery latency with every pair on its conversation's shard owner
//     (local: no push crosses the bus) against every pair away from it,
//     sender and receiver on two other instances (cross: every 2001 and
//     2101 crosses), alternating;
//  3. push completeness per kind at 1,000 msg/s with the cross placement;
//  4. login-policy kick and logout propagation across instances.

// benchCluster is the step's instances. They share prefix; Close stops
// them and then deletes its keys.
type benchCluster struct {
	so     serverOptions
	log    io.Writer
	prefix string
	secret string // jwt.secret: a token of one instance is valid on all
	nodes  []*inProcessServer
}

func newBenchCluster(so serverOptions, log io.Writer) *benchCluster {
	b := make([]byte, 36)
	_, _ = rand.Read(b)
	so.FreshDB = false // the suite's server uses the database already
	so.Env = nil
	so.KeyPrefix = "nexobench-cl" + hex.EncodeToString(b[:4])
	return &benchCluster{so: so, log: log, prefix: so.KeyPrefix, secret: hex.EncodeToString(b[4:])}
}

// add starts one more instance and waits until the shards are spread
// evenly over all of them.
func (c *benchCluster) add(ctx context.Context) error {
	so := c.so
	id := fmt.Sprintf("%s-n%d", c.prefix, len(c.nodes)+1)
	// The suite's servers set streams.consumer_name; here the instance id
	// must name the consumer, as in production.
	so.Env = []string{"NEXO_CLUSTER_INSTANCE_ID=" + id, "NEXO_STREAMS_CONSUMER_NAME=" + id, "NEXO_JWT_SECRET=" + c.secret}
	n, err := startInProcess(ctx, so, c.log)
	if err != nil {
		return fmt.Errorf("start instance %d of the cluster: %w", len(c.nodes)+1, err)
	}
	c.nodes = append(c.nodes, n)
	return c.waitBalanced(ctx, 60*time.Second)
}

// waitBalanced waits until every shard is run by exactly one instance and
// none runs more than its share (ceil(shards / instances)): the state
// workers.Assign converges to once every instance sees the others.
func (c *benchCluster) waitBalanced(ctx context.Context, limit time.Duration) error {
	deadline := time.Now().Add(limit)
	for {
		owners, err := c.owners(ctx)
		if err == nil && balanced(owners, c.nodes[0].shards, len(c.nodes)) {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("shards not spread over %d instances after %s (owners %v, %v)", len(c.nodes), limit, owners, err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// owners maps each shard to the instances (indexes into nodes) running it.
func (c *benchCluster) owners(ctx context.Context) (map[int][]int, error) {
	out := map[int][]int{}
	for i, n := range c.nodes {
		shards, err := n.ownedShards(ctx)
		if err != nil {
			return nil, err
		}
		for _, s := range shards {
			out[s] = append(out[s], i)
		}
	}
	return out, nil
}

func balanced(owners map[int][]int, shards, instances int) bool {
	share := (shards + instances - 1) / instances
	per := make([]int, instances)
	for s := 0; s < shards; s++ {
		if len(owners[s]) != 1 {
			return false
		}
		per[owners[s][0]]++
	}
	for _, n := range per {
		if n == 0 && shards >= instances || n > share {
			return false
		}
	}
	return true
}

// urls is the base URLs of the first n instances, comma-separated (a
// --url list: sessions go round-robin by index).
func (c *benchCluster) urls(n int) string {
	var u []string
	for _, s := range c.nodes[:n] {
		u = append(u, s.URL())
	}
	return strings.Join(u, ",")
}

// Close stops every instance, the newest first, then deletes the shared
// prefix's keys (no instance is left to need them).
func (c *benchCluster) Close() error {
	var errs []error
	for i := len(c.nodes) - 1; i >= 0; i-- {
		errs = append(errs, c.nodes[i].Close())
	}
	if len(c.nodes) > 0 {
		errs = append(errs, c.nodes[0].deleteKeys())
	}
	return errors.Join(errs...)
}

// shardOf is the public routing rule of docs/pipeline.md:
// fnv32a(conversation_id) mod streams.shards.
func shardOf(conv string, shards int) int {
	h := fnv.New32a()
	_, _ = h.Write([]byte(conv))
	return int(h.Sum32() % uint32(shards))
}

// placement places each pair by its conversation's shard owner: local puts
// sender and receiver on the owner; otherwise the sender goes to the next
// instance and the receiver to the one after (with three instances: all
// three differ, so the 2001 push and the 2101 ACK(saved) both cross).
func (c *benchCluster) placement(owners map[int][]int, local bool) func(s, r string) (string, string) {
	n := len(c.nodes)
	return func(s, r string) (string, string) {
		o := owners[shardOf(singleConversationID(s, r), c.nodes[0].shards)][0]
		if local {
			return c.nodes[o].URL(), c.nodes[o].URL()
		}
		return c.nodes[(o+1)%n].URL(), c.nodes[(o+2)%n].URL()
	}
}

// placeSwitch is the comparison's modeSwitch: it names the placements and
// refuses to go on if the shards moved since the sessions were placed
// (the local side would no longer be local).
type placeSwitch struct {
	ctx    context.Context
	c      *benchCluster
	placed map[int][]int
}

func (p placeSwitch) SetMode(spec string) (string, error) {
	now, err := p.c.owners(p.ctx)
	if err != nil {
		return "", err
	}
	for s, o := range p.placed {
		if len(now[s]) != 1 || now[s][0] != o[0] {
			return "", fmt.Errorf("shard %d moved from instance %d to %v during the comparison", s, o[0]+1, now[s])
		}
	}
	if spec == "cross" {
		return "cross: sender and receiver each on another instance than their conversation's shard owner (every 2001 and 2101 crosses the bus)", nil
	}
	return "local: sender and receiver on their conversation's shard owner (no push crosses the bus)", nil
}

// cluster runs the step.
func (s *suite) cluster(ctx context.Context, name string) (SuiteEntry, error) {
	jsonPath, htmlPath, e := s.files(name)
	e.Kind = "cluster"
	c := newBenchCluster(s.so, s.log)
	defer func() {
		if err := c.Close(); err != nil {
			fmt.Fprintf(s.log, "cluster: stop: %v\n", err)
		}
	}()
	out := &ClusterResult{Tool: "nexo-bench", Schema: 1, Name: name, Instances: 3}

	base := func(label string) options {
		o := s.base()
		o.Label, o.Pairs, o.Rate = label, 100, 1000
		o.Warmup, o.Duration = time.Second, s.scaled(5*time.Second)
		if s.quick {
			o.Rate = o.Rate / 5
		}
		return o
	}
	// 1. CPU per 1,000 messages as instances join.
	for k := 1; k <= out.Instances; k++ {
		if err := c.add(ctx); err != nil {
			return e, err
		}
		o := base(fmt.Sprintf("%s-cpu-%d", name, k))
		o.URL = c.urls(k) // round-robin: a pair's two sessions on two instances from k = 2
		res, err := s.clusterRun(ctx, &o, fmt.Sprintf("%d instance(s), round-robin", k), nil)
		if err != nil {
			return e, err
		}
		out.CPU = append(out.CPU, cpuOf(k, res))
	}
	out.Bus, out.Shards = c.nodes[0].bus, c.nodes[0].shards
	owners, err := c.owners(ctx)
	if err != nil {
		return e, err
	}

	// 2. Cross-instance vs local delivery, alternating.
	o := base(name + "-latency")
	o.Repeat = 3
	if s.quick {
		o.Repeat = 1
	}
	o.URL = c.urls(out.Instances)
	oa, ob := o, o
	oa.Place, ob.Place = c.placement(owners, true), c.placement(owners, false)
	a, err := newSession(ctx, &oa, o.URL, s.log)
	if err != nil {
		return e, err
	}
	defer a.close()
	b, err := newSession(ctx, &ob, o.URL, s.log)
	if err != nil {
		return e, err
	}
	defer b.close()
	cmp, err := runCompare(ctx, s.log, &o, a, b, "local", "cross", placeSwitch{ctx: ctx, c: c, placed: owners})
	if err != nil {
		return e, err
	}
	writeCompare(s.stdout, cmp)
	out.Latency = cmp
	out.CrossMinusLocalP99 = round3(cmp.B.Median["delivery_p99_ms"] - cmp.A.Median["delivery_p99_ms"])

	// 3. Completeness at 1,000 msg/s, every push across instances.
	oc := base(name + "-completeness")
	oc.Duration = s.scaled(10 * time.Second)
	oc.URL, oc.Place = c.urls(out.Instances), c.placement(owners, false)
	var bus map[string]float64
	res, err := s.clusterRun(ctx, &oc, "3 instances, cross placement", func() func() {
		before := c.busMetrics(ctx)
		return func() { bus = subtractMetrics(c.busMetrics(ctx), before) }
	})
	if err != nil {
		return e, err
	}
	out.Completeness = completenessOf(res, bus)

	// 4. Session events across instances.
	samples := 100
	if s.quick {
		samples = 20
	}
	if out.Propagation, err = propagation(ctx, c, samples); err != nil {
		return e, err
	}

	out.OK = out.ok()
	writeCluster(s.stdout, out)
	e.OK = out.OK
	return e, writeOutputs(jsonPath, htmlPath, out, name, clusterText(out), clusterCharts(out))
}

// clusterRun sets up a session, runs it once and tears it down. around,
// when set, is called just before the run and returns what to call just
// after it (before the teardown): the bus counters of the run alone.
func (s *suite) clusterRun(ctx context.Context, o *options, mode string, around func() func()) (*Result, error) {
	sess, err := newSession(ctx, o, o.URL, s.log)
	if err != nil {
		return nil, err
	}
	defer sess.close()
	sess.mode = mode
	after := func() {}
	if around != nil {
		after = around()
	}
	res, err := sess.runMessages(ctx, o.Label)
	after()
	if err != nil {
		return nil, err
	}
	writeTable(s.log, &res)
	return &res, nil
}

// busMetrics sums the nexo_cluster_* series of every instance's /metrics.
func (c *benchCluster) busMetrics(ctx context.Context) map[string]float64 {
	out := map[string]float64{}
	for _, n := range c.nodes {
		for k, v := range newAPI(n.URL()).metricSeries(ctx, "nexo_cluster_") {
			out[k] += v
		}
	}
	return out
}

func subtractMetrics(after, before map[string]float64) map[string]float64 {
	out := map[string]float64{}
	for k, v := range after {
		if d := v - before[k]; d != 0 {
			out[k] = d
		}
	}
	return out
}
