package redistest

import (
	"context"
	"fmt"
	"os/exec"
	"strconv"
	"strings"
	"sync"

	"github.com/redis/go-redis/v9"
)

// Cluster is a Redis Cluster of 3 masters and 3 replicas (one each), with a
// 1 s node timeout so a killed master's replica takes over within seconds.
type Cluster struct {
	dir   string
	mu    sync.Mutex
	nodes []*Node
	args  map[int][]string
}

// clusterArgs are the flags of one node: no persistence; node timeout 1 s;
// any replica may fail over however long it was disconnected; slots whose
// master is gone fail alone instead of the whole cluster
// (cluster-require-full-coverage no, the setting docs/deploy.md recommends).
func clusterArgs(port int) []string {
	return []string{"--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--protected-mode", "no",
		"--cluster-enabled", "yes", "--cluster-config-file", fmt.Sprintf("nodes-%d.conf", port),
		"--cluster-node-timeout", "1000", "--cluster-replica-validity-factor", "0",
		"--cluster-require-full-coverage", "no", "--save", "", "--appendonly", "no"}
}

// StartCluster starts the six nodes in dir, joins them with
// `redis-cli --cluster create --cluster-replicas 1`, and waits until every
// node reports cluster_state:ok and every replica is in sync. stop kills
// every node.
func StartCluster(ctx context.Context, dir string) (*Cluster, func(), error) {
	cli, err := exec.LookPath("redis-cli")
	if err != nil {
		return nil, nil, fmt.Errorf("redis-cli not installed: %w", err)
	}
	ports, err := freePorts(6)
	if err != nil {
		return nil, nil, err
	}
	c := &Cluster{dir: dir, args: map[int][]string{}}
	stop := func() {
		c.mu.Lock()
		defer c.mu.Unlock()
		for _, n := range c.nodes {
			n.Kill()
		}
	}
	for _, p := range ports {
		c.args[p] = clusterArgs(p)
		n, err := start(ctx, dir, p, c.args[p]...)
		if err != nil {
			stop()
			return nil, nil, err
		}
		c.nodes = append(c.nodes, n)
	}
	args := []string{"--cluster", "create"}
	args = append(args, c.Seeds()...)
	args = append(args, "--cluster-replicas", "1", "--cluster-yes")
	if out, err := exec.CommandContext(ctx, cli, args...).CombinedOutput(); err != nil {
		stop()
		return nil, nil, fmt.Errorf("redis-cli --cluster create: %v: %s", err, out)
	}
	if err := c.WaitHealthy(ctx); err != nil {
		stop()
		return nil, nil, err
	}
	return c, stop, nil
}

// SharedCluster returns the test binary's one Cluster, starting it on first
// use.
func SharedCluster() (*Cluster, error) {
	return sharedStart("cluster", StartCluster)
}

// Seeds lists every node's address.
func (c *Cluster) Seeds() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []string
	for _, n := range c.nodes {
		out = append(out, n.Addr)
	}
	return out
}

// Client returns a new ClusterClient over the seeds; the caller closes it.
func (c *Cluster) Client() *redis.ClusterClient {
	return redis.NewClusterClient(&redis.ClusterOptions{Addrs: c.Seeds(), PoolSize: 32})
}

func (c *Cluster) alive() []*Node {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []*Node
	for _, n := range c.nodes {
		if n.Alive() {
			out = append(out, n)
		}
	}
	return out
}

// WaitHealthy polls until every live node reports cluster_state:ok, every
// slot has a live master, and every live replica's link to its master is up.
func (c *Cluster) WaitHealthy(ctx context.Context) error {
	return poll(ctx, func() error {
		for _, n := range c.alive() {
			nc := redis.NewClient(&redis.Options{Addr: n.Addr, MaxRetries: -1})
			info, err := nc.ClusterInfo(ctx).Result()
			repl, err2 := nc.Info(ctx, "replication").Result()
			_ = nc.Close()
			if err != nil || err2 != nil {
				return fmt.Errorf("node %s: %v %v", n.Addr, err, err2)
			}
			if !strings.Contains(info, "cluster_state:ok") || !strings.Contains(info, "cluster_slots_ok:16384") {
				return fmt.Errorf("node %s: cluster not ok", n.Addr)
			}
			if strings.Contains(repl, "role:slave") && !strings.Contains(repl, "master_link_status:up") {
				return fmt.Errorf("replica %s not in sync", n.Addr)
			}
		}
		return nil
	})
}

// MasterOf returns the node that is master of key's slot now, per a live
// node's slot map.
func (c *Cluster) MasterOf(ctx context.Context, key string) (*Node, error) {
	slot := Slot(key)
	for _, n := range c.alive() {
		nc := redis.NewClient(&redis.Options{Addr: n.Addr, MaxRetries: -1})
		slots, err := nc.ClusterSlots(ctx).Result()
		_ = nc.Close()
		if err != nil {
			continue
		}
		for _, s := range slots {
			if slot >= s.Start && slot <= s.End && len(s.Nodes) > 0 {
				return c.byAddr(s.Nodes[0].Addr)
			}
		}
	}
	return nil, fmt.Errorf("no live node knows the master of slot %d", slot)
}

func (c *Cluster) byAddr(addr string) (*Node, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, n := range c.nodes {
		if n.Addr == addr {
			return n, nil
		}
	}
	return nil, fmt.Errorf("unknown node %s", addr)
}

// KillMasterOf SIGKILLs the master of key's slot and returns it; the caller
// waits for the promotion with WaitPromoted.
func (c *Cluster) KillMasterOf(ctx context.Context, key string) (*Node, error) {
	m, err := c.MasterOf(ctx, key)
	if err != nil {
		return nil, err
	}
	m.Kill()
	return m, nil
}

// WaitPromoted polls until key's slot is served by a live master other than
// old and the cluster is ok again.
func (c *Cluster) WaitPromoted(ctx context.Context, key string, old *Node) (*Node, error) {
	var nm *Node
	err := poll(ctx, func() error {
		m, err := c.MasterOf(ctx, key)
		if err != nil {
			return err
		}
		if m == old || !m.Alive() {
			return fmt.Errorf("slot %d still mapped to %s", Slot(key), m.Addr)
		}
		nc := redis.NewClient(&redis.Options{Addr: m.Addr, MaxRetries: -1})
		defer nc.Close()
		role, err := nc.Do(ctx, "ROLE").Slice()
		if err != nil || len(role) == 0 || role[0] != "master" {
			return fmt.Errorf("%s not master yet: %v %v", m.Addr, role, err)
		}
		nm = m
		return nil
	})
	return nm, err
}

// Restart starts a killed node again with its old config file, so it
// rejoins the cluster (as a replica of whoever took its slots), and waits
// until the cluster is healthy.
func (c *Cluster) Restart(ctx context.Context, n *Node) error {
	nn, err := start(ctx, c.dir, n.Port, c.args[n.Port]...)
	if err != nil {
		return err
	}
	c.mu.Lock()
	for i, x := range c.nodes {
		if x == n {
			c.nodes[i] = nn
		}
	}
	c.mu.Unlock()
	return c.WaitHealthy(ctx)
}

// Slot is the cluster hash slot of key (CRC16 of its hash tag or whole
// name, modulo 16384).
func Slot(key string) int {
	if i := strings.IndexByte(key, '{'); i >= 0 {
		if j := strings.IndexByte(key[i+1:], '}'); j > 0 {
			key = key[i+1 : i+1+j]
		}
	}
	return int(crc16(key) % 16384)
}

func crc16(s string) uint16 {
	var crc uint16
	for i := 0; i < len(s); i++ {
		crc ^= uint16(s[i]) << 8
		for b := 0; b < 8; b++ {
			if crc&0x8000 != 0 {
				crc = crc<<1 ^ 0x1021
			} else {
				crc <<= 1
			}
		}
	}
	return crc
}

// MoveSlot migrates key's slot, keys and all, from its master to another
// master (the first one that is not the owner), the way `redis-cli --cluster
// reshard` does it: IMPORTING/MIGRATING, MIGRATE in batches, then SETSLOT
// NODE on every master. Clients see ASK redirects (and TRYAGAIN for
// multi-key commands) while it runs. It returns the new owner.
func (c *Cluster) MoveSlot(ctx context.Context, key string) (*Node, error) {
	slot := Slot(key)
	src, err := c.MasterOf(ctx, key)
	if err != nil {
		return nil, err
	}
	var dst *Node
	var masters []*redis.Client
	defer func() {
		for _, m := range masters {
			_ = m.Close()
		}
	}()
	for _, n := range c.alive() {
		nc := redis.NewClient(&redis.Options{Addr: n.Addr, MaxRetries: -1})
		role, err := nc.Do(ctx, "ROLE").Slice()
		if err != nil || len(role) == 0 || role[0] != "master" {
			_ = nc.Close()
			continue
		}
		masters = append(masters, nc)
		if n != src && dst == nil {
			dst = n
		}
	}
	if dst == nil {
		return nil, fmt.Errorf("no other master to move slot %d to", slot)
	}
	id := func(addr string) (string, error) {
		nc := redis.NewClient(&redis.Options{Addr: addr})
		defer nc.Close()
		return nc.Do(ctx, "CLUSTER", "MYID").Text()
	}
	srcID, err := id(src.Addr)
	if err != nil {
		return nil, err
	}
	dstID, err := id(dst.Addr)
	if err != nil {
		return nil, err
	}
	sc := redis.NewClient(&redis.Options{Addr: src.Addr})
	defer sc.Close()
	dc := redis.NewClient(&redis.Options{Addr: dst.Addr})
	defer dc.Close()
	if err := dc.Do(ctx, "CLUSTER", "SETSLOT", slot, "IMPORTING", srcID).Err(); err != nil {
		return nil, fmt.Errorf("importing: %w", err)
	}
	if err := sc.Do(ctx, "CLUSTER", "SETSLOT", slot, "MIGRATING", dstID).Err(); err != nil {
		return nil, fmt.Errorf("migrating: %w", err)
	}
	host, port, _ := strings.Cut(dst.Addr, ":")
	for {
		keys, err := sc.ClusterGetKeysInSlot(ctx, slot, 100).Result()
		if err != nil {
			return nil, err
		}
		if len(keys) == 0 {
			break
		}
		args := []any{"MIGRATE", host, port, "", 0, 5000, "REPLACE", "KEYS"}
		for _, k := range keys {
			args = append(args, k)
		}
		if err := sc.Do(ctx, args...).Err(); err != nil {
			return nil, fmt.Errorf("migrate %d keys: %w", len(keys), err)
		}
	}
	for _, m := range append([]*redis.Client{dc, sc}, masters...) {
		if err := m.Do(ctx, "CLUSTER", "SETSLOT", slot, "NODE", dstID).Err(); err != nil {
			return nil, fmt.Errorf("setslot node: %w", err)
		}
	}
	return dst, nil
}
