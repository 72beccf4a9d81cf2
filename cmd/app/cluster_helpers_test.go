package app

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/nexo-im/nexo/configs"
	"github.com/nexo-im/nexo/store/storetest"
)

// testInstance is one app of a test cluster.
type testInstance struct {
	app  *App
	base string
	logs *storetest.LogBuffer
	stop func() error
}

// startCluster starts n app instances on one database and one Redis key
// prefix (realConfig), named n1..nN (cluster.instance_id, and so consumer
// name and presence member), each on its own port, and waits until every
// instance sees all n live. tweak, when set, adjusts instance i's config
// (0-based) before it starts, e.g. cluster.bus. Instances stop when the
// test ends; stop one earlier with its stop. (The SIGKILL test runs real
// processes instead: sigkill_test.go.)
func startCluster(t *testing.T, n int, tweak func(i int, c *configs.Config)) []*testInstance {
	t.Helper()
	base := realConfig(t)
	base.Streams.ConsumerName = "" // the instance id names the consumer
	// A heartbeat stalls for seconds when the machine is loaded: keep the
	// TTL at the default 3 s, renew often.
	base.Cluster.HeartbeatInterval = 250 * time.Millisecond
	base.Cluster.InstanceTTL = 3 * time.Second
	// realConfig's 500 ms reclaims entries a loaded peer is still working
	// on, and the stage then delivers them twice (at least once, by design):
	// the exactly-once checks here are about routing, not reclaiming.
	base.Streams.ClaimMinIdle = 30 * time.Second
	out := make([]*testInstance, n)
	for i := range n {
		cfg := base
		cfg.Cluster.InstanceID = fmt.Sprintf("n%d", i+1)
		if tweak != nil {
			tweak(i, &cfg)
		}
		if err := cfg.Validate(); err != nil {
			t.Fatal(err)
		}
		a, url, logs, stop := runApp(t, cfg)
		out[i] = &testInstance{app: a, base: url, logs: logs, stop: stop}
		t.Cleanup(func() {
			if t.Failed() && os.Getenv("NEXO_TEST_CLUSTER_LOGS") != "" {
				t.Logf("logs of %s:\n%s", cfg.Cluster.InstanceID, logs)
			}
		})
	}
	deadline := time.Now().Add(10 * time.Second)
	for _, in := range out {
		for len(in.app.member.Live()) != n {
			if time.Now().After(deadline) {
				t.Fatalf("%s sees %d live instances, want %d", in.app.member.Self().ID, len(in.app.member.Live()), n)
			}
			time.Sleep(20 * time.Millisecond) // polling a condition with a deadline
		}
	}
	return out
}

// within fails the test unless done is closed within d (propagation
// deadlines: the issue asks for session events in under 1 s).
func within(t *testing.T, d time.Duration, what string, done <-chan struct{}) {
	t.Helper()
	select {
	case <-done:
	case <-time.After(d):
		t.Fatalf("%s: not within %s", what, d)
	}
}

// propagation waits for a session event to reach another instance. The
// target is under 1 s (issue 11), and the nexo-bench cluster step measures
// it (docs/bench/cluster.md: p99 1.3 ms for a kick, 0.37 ms for a logout).
// Here the test runs beside every other package's tests under -race, where
// a scheduler stall of a second happens now and then: past 1 s the miss is
// logged with the Redis round trip of the moment, and only past 10 s does
// the test fail (the event did not propagate).
func propagation(t *testing.T, nodes []*testInstance, what string, done <-chan struct{}) {
	t.Helper()
	began := time.Now()
	select {
	case <-done:
		t.Logf("%s: %s", what, time.Since(began))
		return
	case <-time.After(time.Second):
	}
	ping := time.Now()
	_ = nodes[0].app.rdb.Ping(context.Background()).Err()
	t.Logf("%s: not within 1 s (Redis round trip %s); waiting up to 10 s", what, time.Since(ping))
	within(t, 9*time.Second, what, done)
	t.Logf("%s: %s", what, time.Since(began))
}
