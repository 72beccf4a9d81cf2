// Package redistest starts real Redis topologies for tests from the
// redis-server binary: a Redis Cluster of 3 masters + 3 replicas and a
// Sentinel setup (1 master, 1 replica, 3 sentinels), each on free loopback
// ports in a temporary directory, with no persistence. Tests use them to
// prove that every script and scan is cluster-safe and that a failover is
// survived.
//
// A topology is started at most once per test binary (Shared) and torn down
// by Main (from TestMain) or, failing that, by the kernel: every child gets
// SIGKILL when the test process dies (Pdeathsig), so nothing outlives a run.
package redistest

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"
)

// MasterName is the name the sentinels monitor.
const MasterName = "nexo"

// Node is one redis-server (or sentinel) process.
type Node struct {
	Addr string
	Port int
	cmd  *exec.Cmd
	done chan struct{}
}

// Kill sends SIGKILL and waits for the process to exit.
func (n *Node) Kill() {
	if n.cmd == nil || n.cmd.Process == nil {
		return
	}
	_ = n.cmd.Process.Kill()
	<-n.done
}

// Alive reports whether the process is still running.
func (n *Node) Alive() bool {
	select {
	case <-n.done:
		return false
	default:
		return true
	}
}

func serverBinary() (string, error) {
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		return "", fmt.Errorf("redis-server not installed (apt-get install redis-server): %w", err)
	}
	return bin, nil
}

// start runs redis-server with args in dir and waits until it answers PING.
func start(ctx context.Context, dir string, port int, args ...string) (*Node, error) {
	bin, err := serverBinary()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, args...)
	cmd.Dir = dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	logf, err := os.Create(filepath.Join(dir, fmt.Sprintf("%d.log", port)))
	if err != nil {
		return nil, err
	}
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		_ = logf.Close()
		return nil, fmt.Errorf("start redis-server on %d: %w", port, err)
	}
	n := &Node{Addr: fmt.Sprintf("127.0.0.1:%d", port), Port: port, cmd: cmd, done: make(chan struct{})}
	go func() { _ = cmd.Wait(); _ = logf.Close(); close(n.done) }()
	c := redis.NewClient(&redis.Options{Addr: n.Addr, MaxRetries: -1})
	defer c.Close()
	err = poll(ctx, func() error {
		if !n.Alive() {
			log, _ := os.ReadFile(filepath.Join(dir, fmt.Sprintf("%d.log", port)))
			err := fmt.Errorf("redis-server on %d exited: %s", port, lastLines(string(log), 5))
			if strings.Contains(string(log), "Address already in use") {
				err = fmt.Errorf("%w: %w", errPortTaken, err)
			}
			return errStop{err}
		}
		// The port may answer for another test binary's server that took it
		// first: only our own process counts as started.
		info, err := c.Info(ctx, "server").Result()
		if err != nil {
			return err
		}
		if !strings.Contains(info, fmt.Sprintf("process_id:%d\r\n", cmd.Process.Pid)) {
			return fmt.Errorf("%w: 127.0.0.1:%d answers for another redis-server", errPortTaken, port)
		}
		return nil
	})
	if err != nil {
		n.Kill()
		return nil, err
	}
	return n, nil
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], " | ")
}

// errStop ends a poll at once.
type errStop struct{ error }

// poll calls f every 20 ms until it returns nil, returns errStop, or ctx
// ends. It waits on other processes (redis-server starting, a failover), not
// on code of ours.
func poll(ctx context.Context, f func() error) error {
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		err := f()
		if err == nil {
			return nil
		}
		var stop errStop
		if errors.As(err, &stop) {
			return stop.error
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w (last: %v)", ctx.Err(), err)
		case <-tick.C:
		}
	}
}

// Poll is poll for tests: f until nil or the deadline passes.
func Poll(d time.Duration, f func() error) error {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	return poll(ctx, f)
}

var portMu sync.Mutex

// errPortTaken says a redis-server could not bind its port: another process
// took it between freePorts and the start. sharedStart then starts the whole
// topology again on new ports.
var errPortTaken = errors.New("port taken")

// Ports are drawn from [portLow, portLow+portSpan), so that a port and its
// cluster bus port (+10000) both lie below Linux's ephemeral range (32768 and
// up): no outgoing connection of any process can take one between the check
// here and redis-server's bind. Only another test binary drawing the same
// port can, and that is what errPortTaken retries.
const (
	portLow  = 10000
	portSpan = 12000
)

// freePorts returns n loopback ports that are free now, each with port+10000
// free too (the cluster bus port).
func freePorts(n int) ([]int, error) {
	portMu.Lock()
	defer portMu.Unlock()
	var out []int
	var hold []net.Listener
	defer func() {
		for _, l := range hold {
			_ = l.Close()
		}
	}()
	for tries := 0; len(out) < n && tries < 500; tries++ {
		p := portLow + rand.IntN(portSpan)
		l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(p))
		if err != nil {
			continue
		}
		bus, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(p+10000))
		if err != nil {
			_ = l.Close()
			continue
		}
		hold = append(hold, l, bus)
		out = append(out, p)
	}
	if len(out) < n {
		return nil, fmt.Errorf("found only %d free port pairs", len(out))
	}
	return out, nil
}

// Shared topologies, started once per test binary.
var (
	sharedMu  sync.Mutex
	shared    = map[string]*sharedTopo{}
	stopFuncs []func()
)

type sharedTopo struct {
	once sync.Once
	topo any
	err  error
}

func sharedStart[T any](kind string, startFn func(ctx context.Context, dir string) (T, func(), error)) (T, error) {
	sharedMu.Lock()
	s := shared[kind]
	if s == nil {
		s = &sharedTopo{}
		shared[kind] = s
	}
	sharedMu.Unlock()
	s.once.Do(func() {
		dir, err := os.MkdirTemp("", "nexo-"+kind+"-")
		if err != nil {
			s.err = err
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		t, stop, err := startFn(ctx, dir)
		for try := 1; errors.Is(err, errPortTaken) && try < 3; try++ {
			// A directory of its own, so that no file of the failed try
			// (a cluster node's nodes-<port>.conf) is read again.
			sub := filepath.Join(dir, fmt.Sprintf("try%d", try))
			if err = os.Mkdir(sub, 0o700); err == nil {
				t, stop, err = startFn(ctx, sub)
			}
		}
		if err != nil {
			_ = os.RemoveAll(dir)
			s.err = fmt.Errorf("start %s: %w", kind, err)
			return
		}
		s.topo = t
		sharedMu.Lock()
		stopFuncs = append(stopFuncs, func() { stop(); _ = os.RemoveAll(dir) })
		sharedMu.Unlock()
	})
	if s.err != nil {
		var zero T
		return zero, s.err
	}
	return s.topo.(T), nil
}

// Main runs the tests and stops every shared topology afterwards: call it
// from TestMain as os.Exit(redistest.Main(m)).
func Main(m interface{ Run() int }) int {
	code := m.Run()
	StopShared()
	return code
}

// StopShared kills every shared topology and removes its directory.
func StopShared() {
	sharedMu.Lock()
	fs := stopFuncs
	stopFuncs = nil
	sharedMu.Unlock()
	for _, f := range fs {
		f()
	}
}

// ReplicaAddrs lists the replicas connected to the server at master (from
// its INFO replication).
func ReplicaAddrs(ctx context.Context, master string) ([]string, error) {
	nc := redis.NewClient(&redis.Options{Addr: master, MaxRetries: -1})
	defer nc.Close()
	info, err := nc.Info(ctx, "replication").Result()
	if err != nil {
		return nil, err
	}
	var out []string
	for _, line := range strings.Split(info, "\n") {
		line = strings.TrimSpace(line)
		if !strings.HasPrefix(line, "slave") || !strings.Contains(line, "ip=") {
			continue
		}
		var ip, port string
		for _, kv := range strings.Split(line[strings.IndexByte(line, ':')+1:], ",") {
			k, v, _ := strings.Cut(kv, "=")
			switch k {
			case "ip":
				ip = v
			case "port":
				port = v
			}
		}
		out = append(out, ip+":"+port)
	}
	return out, nil
}

// CutReplication disconnects the replica at addr from its master and keeps
// it disconnected (a wrong masterauth fails every reconnect), so the
// master's next writes are not replicated — what a master's crash loses in
// a real failover. It returns when the master has no replica left; restore
// undoes it (call it on the replica once it is promoted or before killing
// nothing).
func CutReplication(ctx context.Context, replica, master string) (restore func(), err error) {
	rc := redis.NewClient(&redis.Options{Addr: replica, MaxRetries: -1})
	if err := rc.ConfigSet(ctx, "masterauth", "nexo-test-cut").Err(); err != nil {
		_ = rc.Close()
		return nil, err
	}
	restore = func() {
		_ = rc.ConfigSet(context.Background(), "masterauth", "").Err()
		_ = rc.Close()
	}
	if err := rc.Do(ctx, "CLIENT", "KILL", "TYPE", "master").Err(); err != nil {
		restore()
		return nil, err
	}
	err = poll(ctx, func() error {
		reps, err := ReplicaAddrs(ctx, master)
		if err != nil {
			return err
		}
		for _, r := range reps {
			if r == replica {
				return fmt.Errorf("%s still replicating from %s", replica, master)
			}
		}
		return nil
	})
	if err != nil {
		restore()
		return nil, err
	}
	return restore, nil
}
