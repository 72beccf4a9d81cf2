package workers_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/nexo-im/nexo/domain"
	"github.com/nexo-im/nexo/services/chat"
	"github.com/nexo-im/nexo/store/storetest"
	"github.com/nexo-im/nexo/streams"
	"github.com/nexo-im/nexo/workers"
)

// members is a stand-in for the cluster membership (store.Membership):
// the set of live instance IDs.
type members struct {
	mu   sync.Mutex
	live []string
}

func (m *members) Live() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.live)
}

func (m *members) set(ids ...string) {
	m.mu.Lock()
	m.live = slices.Sorted(slices.Values(ids))
	m.mu.Unlock()
}

// instance is one pipeline process in a test cluster, with its own Redis
// client so an abrupt stop can cut it off mid-batch.
type instance struct {
	name   string
	p      *workers.Pipeline
	rdb    *redis.Client
	cancel context.CancelFunc
	done   chan error
}

const (
	leaseTTL      = 1500 * time.Millisecond
	leaseInterval = 250 * time.Millisecond
)

func (e *env) startOwned(name string, m *members) *instance {
	rdb := redis.NewClient(&redis.Options{Addr: storetest.RedisAddr(e.t)})
	mt := workers.NewMetrics(nil)
	save := workers.NewSaveHandler(workers.SaveDeps{Keys: e.keys, Redis: rdb, Messages: e.msgs, Seqs: e.seqs,
		Allocator: e.acc, Pusher: e.rec, Metrics: mt, Log: e.log})
	deliver := workers.NewDeliverHandler(workers.DeliverDeps{Keys: e.keys, Redis: rdb, Pusher: e.rec, Metrics: mt, Log: e.log})
	p := workers.NewPipeline(rdb, e.keys, e.cfg.Streams, e.cfg.Save, name, save, deliver, e.log)
	p.UseOwnership(workers.Ownership{Leases: streams.NewShardLeases(rdb, e.keys), Live: m.Live, TTL: leaseTTL, Interval: leaseInterval})
	ctx, cancel := context.WithCancel(context.Background())
	in := &instance{name: name, p: p, rdb: rdb, cancel: cancel, done: make(chan error, 1)}
	go func() { in.done <- p.Run(ctx) }()
	return in
}

// stop is a graceful stop: drain, release the leases, return.
func (in *instance) stop(t *testing.T) {
	in.cancel()
	if err := <-in.done; err != nil {
		t.Errorf("%s: %v", in.name, err)
	}
	_ = in.rdb.Close()
}

// kill stops an instance abruptly: its Redis connection is cut mid-work,
// nothing is drained, acknowledged or released; its leases expire.
func (in *instance) kill() {
	_ = in.rdb.Close()
	in.cancel()
}

// waitOwners waits until every shard runs on exactly one instance of ins,
// the one rendezvous hashing picks among live.
func (e *env) waitOwners(what string, live []string, ins ...*instance) {
	e.t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		owner := map[int][]string{}
		for _, in := range ins {
			for _, o := range in.p.Owned() {
				owner[o.Shard] = append(owner[o.Shard], in.name)
			}
		}
		ok := true
		for s := 0; s < e.shards; s++ {
			if len(owner[s]) != 1 || owner[s][0] != workers.DesiredOwner(live, e.shards, s) {
				ok = false
			}
		}
		if ok {
			return
		}
		if time.Now().After(deadline) {
			e.t.Fatalf("%s: shard owners %v, want one each as hashed over %v", what, owner, live)
		}
		time.Sleep(20 * time.Millisecond) // polling with a deadline
	}
}

// TestShardOwnershipRebalancesOnJoinAndLeave: shards spread over the live
// instances by rendezvous hashing, each on exactly one; a joiner gets its
// share once the old owner hands it over, a graceful leaver's shards move
// at once (leases released, not waited out). Real Redis.
func TestShardOwnershipRebalancesOnJoinAndLeave(t *testing.T) {
	e := newEnvShards(t, nil, 8)
	if testing.Verbose() {
		e.log = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	m := &members{}
	m.set("a")
	a := e.startOwned("a", m)
	defer a.stop(t)
	e.waitOwners("one instance", []string{"a"}, a)

	m.set("a", "b")
	b := e.startOwned("b", m)
	a.p.Rebalance()
	e.waitOwners("after b joined", []string{"a", "b"}, a, b)
	if len(b.p.Owned()) == 0 {
		t.Fatal("b got no shard")
	}

	m.set("a")
	began := time.Now()
	b.stop(t) // graceful: releases at once
	leases := streams.NewShardLeases(e.rdb, e.keys)
	owners, err := leases.Owners(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range owners {
		if o.Holder == "b" {
			t.Fatalf("b stopped but still holds shard %d (released leases are not waited out)", o.Shard)
		}
	}
	a.p.Rebalance()
	e.waitOwners("after b left", []string{"a"}, a)
	t.Logf("a graceful leave moved its shards in %v", time.Since(began))
	owners, err = leases.Owners(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range owners {
		if o.Holder != "a" || o.Token <= 0 {
			t.Fatalf("lease of shard %d: %+v", o.Shard, o)
		}
	}
}

// TestAbruptStopOfOneOfThreeInstances: three instances save and deliver a
// stream of messages; one is cut off mid-stream without draining or
// releasing. Its shards move to the survivors within the lease TTL plus a
// heartbeat, no message is lost, none is saved twice (one ACK(saved) each),
// no pull ever shows a not-yet-saved seq as a placeholder, and the dead
// instance's consumers leave the groups once their entries are reclaimed.
// It then restarts, rejoins, and the shards rebalance over three again.
// Real MariaDB and Redis.
func TestAbruptStopOfOneOfThreeInstances(t *testing.T) {
	e := newEnvShards(t, nil, 6)
	ctx := context.Background()
	m := &members{}
	all := []string{"a", "b", "c"}
	m.set(all...)
	a, b, c := e.startOwned("a", m), e.startOwned("b", m), e.startOwned("c", m)
	e.waitOwners("three instances", all, a, b, c)
	if len(c.p.Owned()) == 0 {
		t.Fatal("c owns no shard: nothing to move")
	}

	const convs, perConv = 8, 20
	conv := func(i int) (string, string) { return fmt.Sprint("u", i), fmt.Sprint("v", i) }

	// A puller checks, while everything runs, that no seq it calls a gap
	// ("unavailable") is ever saved: every seq here is issued for a message,
	// so any placeholder would be an in-flight seq called "never".
	puller := chat.NewPuller(e.msgs, e.seqs, nil, streams.NewInFlightReader(e.rdb, e.keys))
	var badPlaceholders atomic.Int64
	var pulls atomic.Int64
	pullCtx, stopPulls := context.WithCancel(ctx)
	pullDone := make(chan struct{})
	go func() {
		defer close(pullDone)
		for i := 0; pullCtx.Err() == nil; i = (i + 1) % convs {
			s, r := conv(i)
			res, err := puller.Pull(ctx, s, chat.PullRequest{ConversationID: domain.SingleConversationID(s, r), BeginSeq: 1})
			if err != nil {
				continue
			}
			pulls.Add(1)
			for _, msg := range res.Messages {
				if msg.Status == string(domain.StatusUnavailable) {
					badPlaceholders.Add(1)
					t.Errorf("pull of %s showed seq %d as unavailable while it was in flight", res.Messages[0].ConversationID, msg.Seq)
				}
			}
		}
	}()

	send := func(round int) {
		for k := 0; k < perConv/2; k++ {
			for i := 0; i < convs; i++ {
				s, r := conv(i)
				e.send(s, r, fmt.Sprintf("m%d-%d-%d", i, round, k), streams.SaveFirst)
			}
		}
	}
	total := convs * perConv
	send(0)
	e.rec.waitFor(t, "a first part saved", 15*time.Second, func() bool { return len(e.rec.saved) >= total/8 })
	killed := time.Now()
	c.kill()
	m.set("a", "b") // the membership notices c's heartbeat is gone
	a.p.Rebalance()
	b.p.Rebalance()
	e.waitOwners("after c died", []string{"a", "b"}, a, b)
	// The take-over bound: claim_min_idle + one heartbeat (here the
	// lease TTL stands for the heartbeat TTL that declares c dead), plus
	// slack for a busy machine.
	if moved, bound := time.Since(killed), leaseTTL+e.cfg.Streams.ClaimMinIdle+leaseInterval; moved > bound+2*time.Second {
		t.Errorf("c's shards moved after %v, want within %v", moved, bound)
	} else {
		t.Logf("c's shards moved %v after it died (bound %v)", moved, bound)
	}
	send(1)
	// Every message is saved once: all rows there, nothing left pending.
	// ACK(saved) pushes are counted too, but c may die between its commit
	// script (entries acknowledged in Redis) and its pushes: that batch's
	// ACK(saved) is lost with c, as a crash loses it, and the sender's retry
	// gets the saved answer from the idempotency record
	// (TestRetriesNeverCreateASecondMessage). So c's last batch may miss
	// its ACK — at most what c's shards held of the first round, bounded
	// here by two conversations' worth — and no message may get two.
	rows := func() int {
		n := 0
		for i := 0; i < convs; i++ {
			s, r := conv(i)
			n += e.savedRows(domain.SingleConversationID(s, r))
		}
		return n
	}
	deadline := time.Now().Add(30 * time.Second)
	for rows() != total || e.pendingTotal() != 0 {
		if time.Now().After(deadline) {
			t.Fatalf("%d rows of %d messages, %d entries pending after 30 s: lost", rows(), total, e.pendingTotal())
		}
		time.Sleep(50 * time.Millisecond) // polling the database and Redis with a deadline
	}
	e.rec.waitFor(t, "ACK(saved) of every message but at most c's last batch", 10*time.Second,
		func() bool { return len(e.rec.saved) >= total-2*perConv })
	stopPulls()
	<-pullDone

	e.rec.mu.Lock()
	savedN, distinct := e.rec.savedN, len(e.rec.saved)
	e.rec.mu.Unlock()
	if savedN != distinct {
		t.Errorf("%d ACK(saved) pushes for %d messages: saved twice", savedN, distinct)
	}
	if distinct < total {
		t.Logf("%d ACK(saved) pushes lost with c's last batch (the messages are saved)", total-distinct)
	}
	if pulls.Load() == 0 {
		t.Error("no pull ran during the test")
	}
	t.Logf("%d pulls during the run, %d bad placeholders", pulls.Load(), badPlaceholders.Load())

	// c's consumers leave the groups once nothing is pending on them.
	deadline = time.Now().Add(15 * time.Second)
	for {
		left := 0
		for s := 0; s < e.shards; s++ {
			for _, st := range [][2]string{{e.keys.ToSave(s), streams.GroupSave}, {e.keys.ToDeliver(s), streams.GroupDeliver}} {
				for _, cs := range e.rdb.XInfoConsumers(ctx, st[0], st[1]).Val() {
					if cs.Name == "c" {
						left++
					}
				}
			}
		}
		if left == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("c is still a consumer of %d groups", left)
		}
		time.Sleep(50 * time.Millisecond) // polling with a deadline
	}

	// c restarts and rejoins; the shards spread over three again.
	m.set(all...)
	c2 := e.startOwned("c", m)
	a.p.Rebalance()
	b.p.Rebalance()
	e.waitOwners("after c rejoined", all, a, b, c2)
	for i := 0; i < convs; i++ {
		s, r := conv(i)
		e.send(s, r, fmt.Sprint("after-", i), streams.SaveFirst)
	}
	// The ACK(saved) pushes lost with c's last batch never come: count from
	// what had arrived.
	e.rec.waitFor(t, "messages after the rejoin saved", 15*time.Second, func() bool { return len(e.rec.saved) >= distinct+convs })
	c2.stop(t)
	b.stop(t)
	a.stop(t)
	if p := e.pendingTotal(); p != 0 {
		t.Errorf("%d entries pending after every instance stopped", p)
	}
}

// TestAssignIsEvenAndStable: every shard gets one live instance, loads
// differ by at most one, and a join moves only shards to the joiner.
func TestAssignIsEvenAndStable(t *testing.T) {
	for _, names := range [][]string{{"a", "b", "c"}, {"host-8080", "host-8081", "host-8082"}, {"n1", "n2"}} {
		for _, shards := range []int{6, 8, 16} {
			got := workers.Assign(names, shards)
			load := map[string]int{}
			for _, id := range got {
				load[id]++
			}
			lo, hi := shards, 0
			for _, id := range names {
				lo, hi = min(lo, load[id]), max(hi, load[id])
			}
			if hi-lo > 1 {
				t.Errorf("%v over %d shards: loads %v", names, shards, load)
			}
			more := workers.Assign(append(slices.Clone(names), "zz"), shards)
			for s := range got {
				if more[s] != got[s] && more[s] != "zz" {
					t.Logf("%v + zz, %d shards: shard %d moved %s -> %s (bounded load)", names, shards, s, got[s], more[s])
				}
			}
		}
	}
}

// TestReleaseAfterRunStoppedBeforeStarting: a process stopped right after
// it started (its pipeline's Run returns before taking any shard) must not
// leave Release — the SIGTERM drain hook — waiting forever.
func TestReleaseAfterRunStoppedBeforeStarting(t *testing.T) {
	e := newEnvShards(t, nil, 2)
	m := &members{}
	m.set("a")
	in := e.startOwned("a", m)
	in.cancel()
	select {
	case err := <-in.done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Run did not return after cancel")
	}
	_ = in.rdb.Close()
	released := make(chan error, 1)
	go func() { released <- in.p.Release(context.Background()) }()
	select {
	case err := <-released:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Release still waiting 30 s after Run returned")
	}
}
