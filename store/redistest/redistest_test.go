package redistest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

func TestMain(m *testing.M) { os.Exit(Main(m)) }

func need(t *testing.T, err error) {
	t.Helper()
	if err == nil {
		return
	}
	if os.Getenv("CI") == "true" {
		t.Fatalf("CI=true: %v", err)
	}
	t.Skip(err)
}

// TestClusterServesEverySlotAndFailsOver: the cluster answers on every
// master, and killing the master of a key promotes its replica.
func TestClusterServesEverySlotAndFailsOver(t *testing.T) {
	c, err := SharedCluster()
	need(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cc := c.Client()
	defer cc.Close()
	// ForEachMaster calls fn concurrently, one goroutine per master.
	var masters atomic.Int32
	if err := cc.ForEachMaster(ctx, func(ctx context.Context, n *redis.Client) error { masters.Add(1); return n.Ping(ctx).Err() }); err != nil {
		t.Fatal(err)
	}
	if n := masters.Load(); n != 3 {
		t.Fatalf("%d masters, want 3", n)
	}
	if Slot("a{s3}b") != Slot("{s3}") || Slot("123456789") != 12739 {
		t.Fatalf("slot function wrong: %d", Slot("123456789"))
	}
	if err := cc.Set(ctx, "x{s1}", "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
	// WAIT on the key's master (a bare Do goes to any node): the write must
	// be on the replica that the kill below promotes.
	owner, err := cc.MasterForKey(ctx, "x{s1}")
	if err != nil {
		t.Fatal(err)
	}
	if n, err := owner.Do(ctx, "WAIT", 1, 5000).Int(); err != nil || n < 1 {
		t.Fatalf("WAIT on the master of x{s1}: %d replicas, %v", n, err)
	}
	old, err := c.KillMasterOf(ctx, "x{s1}")
	if err != nil {
		t.Fatal(err)
	}
	nm, err := c.WaitPromoted(ctx, "x{s1}", old)
	if err != nil {
		t.Fatal(err)
	}
	// A bare ClusterClient refreshes its slot map lazily (store.NewRedisClient
	// adds a hook that reloads it on connection errors); reload by hand here.
	if err := Poll(20*time.Second, func() error {
		err := cc.Get(ctx, "x{s1}").Err()
		if err != nil {
			cc.ReloadState(ctx)
		}
		return err
	}); err != nil {
		t.Fatalf("read after failover to %s: %v", nm.Addr, err)
	}
	if err := c.Restart(ctx, old); err != nil {
		t.Fatal(err)
	}
	moved, err := c.MoveSlot(ctx, "x{s1}")
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := cc.Get(ctx, "x{s1}").Result(); got != "v" {
		t.Fatalf("after moving the slot to %s: %q", moved.Addr, got)
	}
}

func TestSentinelFailsOver(t *testing.T) {
	s, err := SharedSentinel()
	need(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	rdb := s.Client()
	defer rdb.Close()
	if err := rdb.Set(ctx, "k", "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if err := rdb.Do(ctx, "WAIT", 1, 2000).Err(); err != nil {
		t.Fatal(err)
	}
	old, err := s.KillMaster(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.WaitPromoted(ctx, old); err != nil {
		t.Fatal(err)
	}
	if err := Poll(20*time.Second, func() error { return rdb.Get(ctx, "k").Err() }); err != nil {
		t.Fatal(err)
	}
	if err := s.Restart(ctx, old); err != nil {
		t.Fatal(err)
	}
}

// TestTakenPortIsReportedForARetry: a redis-server whose port another process
// holds fails with errPortTaken, which sharedStart retries on new ports; and
// freePorts draws below the ephemeral range, bus port included.
func TestTakenPortIsReportedForARetry(t *testing.T) {
	_, err := serverBinary()
	need(t, err)
	ports, err := freePorts(1)
	if err != nil {
		t.Fatal(err)
	}
	p := ports[0]
	if p < portLow || p+10000 >= 32768 {
		t.Fatalf("port %d (bus %d) is not below the ephemeral range", p, p+10000)
	}
	l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(p))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	go func() { // hang up at once, so the start's INFO fails fast rather than on its read timeout
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			_ = c.Close()
		}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	n, err := start(ctx, t.TempDir(), p, serverArgs(p)...)
	if err == nil {
		n.Kill()
		t.Fatal("redis-server started on a taken port")
	}
	if !errors.Is(err, errPortTaken) {
		t.Fatalf("err = %v, want errPortTaken", err)
	}
}

// A topology whose port was taken is started again, in a directory of its
// own; any other error is not retried.
func TestSharedStartRetriesATakenPort(t *testing.T) {
	var dirs []string
	got, err := sharedStart("retry-test", func(_ context.Context, dir string) (string, func(), error) {
		dirs = append(dirs, dir)
		if len(dirs) == 1 {
			return "", nil, fmt.Errorf("%w: on the first try", errPortTaken)
		}
		return "started", func() {}, nil
	})
	if err != nil || got != "started" || len(dirs) != 2 || dirs[1] == dirs[0] {
		t.Fatalf("got %q, %v after tries in %q", got, err, dirs)
	}
	tries := 0
	_, err = sharedStart("no-retry-test", func(context.Context, string) (string, func(), error) {
		tries++
		return "", nil, errors.New("redis-server not installed")
	})
	if err == nil || tries != 1 {
		t.Fatalf("another error: %v after %d tries, want an error after 1", err, tries)
	}
}
