package redistest

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"

	"github.com/redis/go-redis/v9"
)

// Sentinel is one master, one replica and three sentinels monitoring the
// master as MasterName with quorum 2 and down-after 1 s.
type Sentinel struct {
	dir       string
	mu        sync.Mutex
	servers   []*Node // master and replica, in start order
	sentinels []*Node
}

func serverArgs(port int) []string {
	return []string{"--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--protected-mode", "no",
		"--save", "", "--appendonly", "no"}
}

// StartSentinel starts the master, the replica (REPLICAOF the master) and the
// three sentinels in dir, and waits until the replica is in sync and every
// sentinel knows the replica and the two other sentinels (so a failover can
// reach quorum). stop kills every process.
func StartSentinel(ctx context.Context, dir string) (*Sentinel, func(), error) {
	ports, err := freePorts(5)
	if err != nil {
		return nil, nil, err
	}
	s := &Sentinel{dir: dir}
	stop := func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		for _, n := range append(s.sentinels, s.servers...) {
			n.Kill()
		}
	}
	m, err := start(ctx, dir, ports[0], serverArgs(ports[0])...)
	if err != nil {
		return nil, nil, err
	}
	s.servers = append(s.servers, m)
	r, err := start(ctx, dir, ports[1], append(serverArgs(ports[1]), "--replicaof", "127.0.0.1", strconv.Itoa(ports[0]))...)
	if err != nil {
		stop()
		return nil, nil, err
	}
	s.servers = append(s.servers, r)
	if err := waitInSync(ctx, r.Addr); err != nil {
		stop()
		return nil, nil, err
	}
	for _, p := range ports[2:] {
		conf := filepath.Join(dir, fmt.Sprintf("sentinel-%d.conf", p))
		body := fmt.Sprintf("port %d\nbind 127.0.0.1\nprotected-mode no\ndir %s\n"+
			"sentinel monitor %s 127.0.0.1 %d 2\n"+
			"sentinel down-after-milliseconds %s 1000\n"+
			"sentinel failover-timeout %s 10000\n"+
			"sentinel parallel-syncs %s 1\n", p, dir, MasterName, ports[0], MasterName, MasterName, MasterName)
		if err := os.WriteFile(conf, []byte(body), 0o600); err != nil {
			stop()
			return nil, nil, err
		}
		n, err := start(ctx, dir, p, conf, "--sentinel")
		if err != nil {
			stop()
			return nil, nil, err
		}
		s.sentinels = append(s.sentinels, n)
	}
	if err := s.waitSentinels(ctx); err != nil {
		stop()
		return nil, nil, err
	}
	return s, stop, nil
}

// SharedSentinel returns the test binary's one Sentinel setup, starting it
// on first use.
func SharedSentinel() (*Sentinel, error) {
	return sharedStart("sentinel", StartSentinel)
}

func waitInSync(ctx context.Context, replica string) error {
	nc := redis.NewClient(&redis.Options{Addr: replica, MaxRetries: -1})
	defer nc.Close()
	return poll(ctx, func() error {
		info, err := nc.Info(ctx, "replication").Result()
		if err != nil {
			return err
		}
		if !strings.Contains(info, "master_link_status:up") {
			return fmt.Errorf("replica %s not in sync", replica)
		}
		return nil
	})
}

// waitSentinels polls until each sentinel sees one replica of the master
// and two other sentinels.
func (s *Sentinel) waitSentinels(ctx context.Context) error {
	return poll(ctx, func() error {
		for _, n := range s.sentinels {
			sc := redis.NewSentinelClient(&redis.Options{Addr: n.Addr, MaxRetries: -1})
			reps, err := sc.Replicas(ctx, MasterName).Result()
			sens, err2 := sc.Sentinels(ctx, MasterName).Result()
			_ = sc.Close()
			if err != nil || err2 != nil {
				return fmt.Errorf("sentinel %s: %v %v", n.Addr, err, err2)
			}
			if len(reps) < 1 || len(sens) < 2 {
				return fmt.Errorf("sentinel %s sees %d replicas, %d sentinels", n.Addr, len(reps), len(sens))
			}
		}
		return nil
	})
}

// SentinelAddrs lists the sentinels.
func (s *Sentinel) SentinelAddrs() []string {
	var out []string
	for _, n := range s.sentinels {
		out = append(out, n.Addr)
	}
	return out
}

// Client returns a new FailoverClient; the caller closes it.
func (s *Sentinel) Client() *redis.Client {
	return redis.NewFailoverClient(&redis.FailoverOptions{MasterName: MasterName, SentinelAddrs: s.SentinelAddrs(), PoolSize: 32})
}

// Master returns the server the sentinels name as master now.
func (s *Sentinel) Master(ctx context.Context) (*Node, error) {
	for _, n := range s.sentinels {
		sc := redis.NewSentinelClient(&redis.Options{Addr: n.Addr, MaxRetries: -1})
		addr, err := sc.GetMasterAddrByName(ctx, MasterName).Result()
		_ = sc.Close()
		if err != nil || len(addr) != 2 {
			continue
		}
		s.mu.Lock()
		for _, srv := range s.servers {
			if srv.Addr == addr[0]+":"+addr[1] {
				s.mu.Unlock()
				return srv, nil
			}
		}
		s.mu.Unlock()
	}
	return nil, fmt.Errorf("no sentinel names a known master")
}

// KillMaster SIGKILLs the current master and returns it.
func (s *Sentinel) KillMaster(ctx context.Context) (*Node, error) {
	m, err := s.Master(ctx)
	if err != nil {
		return nil, err
	}
	m.Kill()
	return m, nil
}

// WaitPromoted polls until the sentinels name a live master other than old
// and that server reports role master.
func (s *Sentinel) WaitPromoted(ctx context.Context, old *Node) (*Node, error) {
	var nm *Node
	err := poll(ctx, func() error {
		m, err := s.Master(ctx)
		if err != nil {
			return err
		}
		if m == old || !m.Alive() {
			return fmt.Errorf("master still %s", m.Addr)
		}
		nc := redis.NewClient(&redis.Options{Addr: m.Addr, MaxRetries: -1})
		defer nc.Close()
		role, err := nc.Do(ctx, "ROLE").Slice()
		if err != nil || len(role) == 0 || role[0] != "master" {
			return fmt.Errorf("%s not master yet", m.Addr)
		}
		nm = m
		return nil
	})
	return nm, err
}

// Restart starts a killed server again as a replica of the current master
// and waits until it is in sync and the sentinels see it.
func (s *Sentinel) Restart(ctx context.Context, n *Node) error {
	m, err := s.Master(ctx)
	if err != nil {
		return err
	}
	args := append(serverArgs(n.Port), "--replicaof", "127.0.0.1", strconv.Itoa(m.Port))
	nn, err := start(ctx, s.dir, n.Port, args...)
	if err != nil {
		return err
	}
	s.mu.Lock()
	for i, x := range s.servers {
		if x == n {
			s.servers[i] = nn
		}
	}
	s.mu.Unlock()
	if err := waitInSync(ctx, nn.Addr); err != nil {
		return err
	}
	return s.waitSentinels(ctx)
}
