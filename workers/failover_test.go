package workers_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/nexo-im/nexo/configs"
	"github.com/nexo-im/nexo/domain"
	"github.com/nexo-im/nexo/store"
	"github.com/nexo-im/nexo/store/redistest"
	"github.com/nexo-im/nexo/store/storetest"
	"github.com/nexo-im/nexo/streams"
)

// topo is what the failover tests need of a topology.
type topo struct {
	cfg          configs.Redis
	masterOf     func(ctx context.Context, key string) (*redistest.Node, error)
	waitPromoted func(ctx context.Context, key string, old *redistest.Node) (*redistest.Node, error)
	restart      func(ctx context.Context, n *redistest.Node) error
}

func clusterTopo(t testing.TB) (*redistest.Cluster, topo) {
	c, err := redistest.SharedCluster()
	if err != nil {
		storetest.RedisCluster(t) // skips, or fails under CI=true
	}
	return c, topo{
		cfg:          configs.Redis{Mode: configs.RedisCluster, Addrs: c.Seeds(), PoolSize: 32},
		masterOf:     c.MasterOf,
		waitPromoted: c.WaitPromoted,
		restart:      c.Restart,
	}
}

func sentinelTopo(t testing.TB) topo {
	s, err := redistest.SharedSentinel()
	if err != nil {
		storetest.RedisSentinel(t)
	}
	return topo{
		cfg:      configs.Redis{Mode: configs.RedisSentinel, Addrs: s.SentinelAddrs(), MasterName: redistest.MasterName, PoolSize: 32},
		masterOf: func(ctx context.Context, _ string) (*redistest.Node, error) { return s.Master(ctx) },
		waitPromoted: func(ctx context.Context, _ string, old *redistest.Node) (*redistest.Node, error) {
			return s.WaitPromoted(ctx, old)
		},
		restart: s.Restart,
	}
}

// load sends steadily from several senders, retrying a failed send with the
// same client_msg_id (what a client does without an ACK), and records
// every accept so the test can check seqs and saves.
type load struct {
	t        testing.TB
	e        *env
	mu       sync.Mutex
	acc      map[string]accepted         // client_msg_id -> final accept
	seq      map[string]map[int64]string // conversation -> seq -> client_msg_id
	errs     map[string]int              // error kinds while sending
	perShard map[int]int
	// watch: the first accept on watchShard that started after watchFrom
	// ends at resumed (failover timing).
	watchShard int
	watchFrom  time.Time
	resumed    time.Time
	stop       chan struct{}
	wg         sync.WaitGroup
}

type accepted struct {
	sender, recv, conv string
	seq                int64
	shard              int
}

func startLoad(t testing.TB, e *env, senders int) *load {
	l := &load{t: t, e: e, acc: map[string]accepted{}, seq: map[string]map[int64]string{}, errs: map[string]int{},
		perShard: map[int]int{}, stop: make(chan struct{})}
	for g := 0; g < senders; g++ {
		l.wg.Add(1)
		go l.sender(g)
	}
	return l
}

func (l *load) sender(g int) {
	defer l.wg.Done()
	tick := time.NewTicker(4 * time.Millisecond) // pacing of the load, not synchronisation
	defer tick.Stop()
	sender := fmt.Sprint("s", g)
	for n := 0; ; n++ {
		recv := fmt.Sprint("r", n%6)
		client := fmt.Sprintf("%s-%d", sender, n)
		for {
			select {
			case <-l.stop:
				return
			case <-tick.C:
			}
			if l.send(sender, recv, client) {
				break
			}
		}
	}
}

// send accepts one message; false means it must be retried.
func (l *load) send(sender, recv, client string) bool {
	e := l.e
	m := domain.Message{
		ServerMsgID: "srv-" + client + "-" + fmt.Sprint(time.Now().UnixNano()), ClientMsgID: client,
		ConversationID: domain.SingleConversationID(sender, recv), SenderID: sender, RecvID: recv,
		SessionType: domain.SessionSingle, MsgType: domain.MsgText, Content: domain.Content{Text: "x"},
		SendAt: time.Now().UnixMilli(),
	}
	// A client waits this long for its answer before it retries; during a
	// failover an accept may wait for the dead node's timeouts.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	began := time.Now()
	a, err := e.acc.Accept(ctx, streams.AcceptRequest{Msg: m, Route: streams.SaveFirst, Append: true})
	l.mu.Lock()
	defer l.mu.Unlock()
	if err != nil {
		kind := "other: " + err.Error()
		switch {
		case errors.Is(err, streams.ErrRedisUnavailable):
			kind = "redis_unavailable" // the send service takes fail_open or server_busy
		case errors.Is(err, domain.ErrServerBusy):
			kind = "server_busy"
		}
		l.errs[kind]++
		return false
	}
	conv := m.ConversationID
	if l.seq[conv] == nil {
		l.seq[conv] = map[int64]string{}
	}
	if other, ok := l.seq[conv][a.Seq]; ok && other != client {
		l.t.Errorf("seq %d of %s issued twice: to %s and %s", a.Seq, conv, other, client)
	}
	l.seq[conv][a.Seq] = client
	if _, ok := l.acc[client]; !ok {
		l.perShard[a.Shard]++
	}
	if !l.watchFrom.IsZero() && l.resumed.IsZero() && a.Shard == l.watchShard && began.After(l.watchFrom) {
		l.resumed = time.Now()
	}
	l.acc[client] = accepted{sender: sender, recv: recv, conv: conv, seq: a.Seq, shard: a.Shard}
	return true
}

func (l *load) count(shard int) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.perShard[shard]
}

func (l *load) end() {
	close(l.stop)
	l.wg.Wait()
}

// waitCount polls until shard has at least n accepted messages.
func (l *load) waitCount(t *testing.T, shard, n int, d time.Duration) {
	t.Helper()
	if err := redistest.Poll(d, func() error {
		if c := l.count(shard); c < n {
			return fmt.Errorf("%d of %d accepted on shard %d", c, n, shard)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
}

// lostLogged returns the client_msg_ids the lost check logged.
func lostLogged(logs *storetest.LogBuffer) map[string]bool {
	out := map[string]bool{}
	for _, line := range strings.Split(logs.String(), "\n") {
		if !strings.Contains(line, "accepted message lost with a redis failover") {
			continue
		}
		var rec struct {
			ClientMsgID string `json:"client_msg_id"`
		}
		if json.Unmarshal([]byte(line), &rec) == nil {
			out[rec.ClientMsgID] = true
		}
	}
	return out
}

// savedClients returns how many rows each client_msg_id has.
func (e *env) savedClients() map[string]int {
	var rows []struct {
		ClientMsgID string
		N           int
	}
	e.db.Gorm.Raw("SELECT client_msg_id, COUNT(*) AS n FROM messages GROUP BY client_msg_id").Scan(&rows)
	out := map[string]int{}
	for _, r := range rows {
		out[r.ClientMsgID] = r.N
	}
	return out
}

// failoverEnv opens the topology through store.NewRedisClient (as the
// server does: the cluster client reloads its slot map on errors) with the
// fence and the lost check on.
func failoverEnv(t *testing.T, tp topo) (*env, *storetest.LogBuffer, *prometheus.Registry) {
	rdb, err := store.NewRedisClient(tp.cfg, store.NewRedisMetrics(nil, ""))
	if err != nil {
		t.Fatal(err)
	}
	prefix := storetest.RandomName("f")
	t.Cleanup(func() {
		storetest.DeletePrefix(rdb, prefix)
		_ = rdb.Close()
	})
	e := newEnvOn(t, nil, rdb, prefix)
	logs := &storetest.LogBuffer{}
	reg := prometheus.NewRegistry()
	e.acc = streams.NewAccepter(rdb, e.keys, e.seqs, 100, time.Hour,
		streams.WithLostCheck(e.msgs, slog.New(slog.NewJSONHandler(logs, nil)), reg, 3*time.Second))
	return e, logs, reg
}

// TestFailoverLosesNoSeqAndReportsLostMessages: under steady sends the
// master owning a busy shard stops replicating (what a crash loses), keeps
// accepting for a while, and is SIGKILLed; its replica is promoted. Then:
// sends in the gap fail as "Redis unavailable" (the send service's
// fail_open / server_busy path) and are retried; accepting resumes without
// a restart; no seq is ever issued twice although the new master's
// allocators are behind; every accepted message is either saved exactly
// once or reported lost (log line + nexo_accept_lost_total), and exactly
// the unsaved ones are reported; retrying the lost ones with their
// client_msg_id saves each exactly once.
func TestFailoverLosesNoSeqAndReportsLostMessages(t *testing.T) {
	t.Run("cluster", func(t *testing.T) {
		_, tp := clusterTopo(t)
		testFailover(t, tp)
	})
	t.Run("sentinel", func(t *testing.T) { testFailover(t, sentinelTopo(t)) })
}

func testFailover(t *testing.T, tp topo) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	e, logs, reg := failoverEnv(t, tp)
	const busy = 0
	busyKey := e.keys.ToSave(busy)
	stopPipeline := e.start("n1")
	l := startLoad(t, e, 4)
	defer func() {
		select {
		case <-l.stop:
		default:
			l.end()
		}
	}()
	l.waitCount(t, busy, 60, 60*time.Second)

	old, err := tp.masterOf(ctx, busyKey)
	if err != nil {
		t.Fatal(err)
	}
	reps, err := redistest.ReplicaAddrs(ctx, old.Addr)
	if err != nil || len(reps) != 1 {
		t.Fatalf("replicas of %s: %v %v", old.Addr, reps, err)
	}
	// The stages stop (so the writes below stay unsaved) and the replica
	// stops receiving: what the master accepts now dies with it.
	stopPipeline()
	restore, err := redistest.CutReplication(ctx, reps[0], old.Addr)
	if err != nil {
		t.Fatal(err)
	}
	before := l.count(busy)
	l.waitCount(t, busy, before+40, 60*time.Second)
	old.Kill()
	killed := time.Now()
	if _, err := tp.waitPromoted(ctx, busyKey, old); err != nil {
		t.Fatal(err)
	}
	restore()
	atKill := l.count(busy)
	stopPipeline = e.start("n1")
	l.waitCount(t, busy, atKill+1, 60*time.Second)
	t.Logf("first accepted send on the failed-over shard %v after the kill", time.Since(killed).Round(time.Millisecond))
	l.waitCount(t, busy, atKill+60, 60*time.Second)
	l.end()

	l.mu.Lock()
	t.Logf("accepted %d messages; errors while sending: %v", len(l.acc), l.errs)
	for kind := range l.errs {
		if kind != "redis_unavailable" {
			t.Errorf("a send failed with %q; during a failover only redis_unavailable is expected", kind)
		}
	}
	all := l.acc
	l.mu.Unlock()

	// Every accepted message ends saved once, or reported lost.
	var saved map[string]int
	var lost map[string]bool
	err = redistest.Poll(60*time.Second, func() error {
		saved, lost = e.savedClients(), lostLogged(logs)
		for c := range all {
			if saved[c] == 0 && !lost[c] {
				return fmt.Errorf("%s neither saved nor reported lost", c)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d messages reported lost (accepted by the old master after its replica was cut, not saved)", len(lost))
	if len(lost) == 0 {
		t.Fatal("no message reported lost although the master accepted 40 unreplicated ones before it died")
	}
	for c := range lost {
		if saved[c] > 0 {
			t.Errorf("%s reported lost but saved", c)
		}
		if _, ok := all[c]; !ok {
			t.Errorf("%s reported lost but never accepted", c)
		}
	}
	if got := counterValue(reg, "nexo_accept_lost_total"); int(got) != len(lost) {
		t.Errorf("nexo_accept_lost_total = %v, %d lost lines", got, len(lost))
	}
	for c, n := range saved {
		if n != 1 {
			t.Errorf("%s saved %d times", c, n)
		}
	}
	// The senders retry what was lost: one saved message each.
	for c := range lost {
		a := all[c]
		m := domain.Message{ServerMsgID: "retry-" + c, ClientMsgID: c, ConversationID: a.conv, SenderID: a.sender,
			RecvID: a.recv, SessionType: domain.SessionSingle, MsgType: domain.MsgText,
			Content: domain.Content{Text: "x"}, SendAt: time.Now().UnixMilli()}
		if _, err := e.acc.Accept(ctx, streams.AcceptRequest{Msg: m, Route: streams.SaveFirst, Append: true}); err != nil {
			t.Fatal(err)
		}
	}
	err = redistest.Poll(60*time.Second, func() error {
		saved = e.savedClients()
		for c := range lost {
			if saved[c] != 1 {
				return fmt.Errorf("retried %s saved %d times", c, saved[c])
			}
		}
		return nil
	})
	stopPipeline()
	if err != nil {
		t.Fatal(err)
	}
	if err := tp.restart(ctx, old); err != nil {
		t.Fatalf("restart the old master as a replica: %v", err)
	}
}

// counterValue reads a counter from a registry (0 when absent).
func counterValue(reg *prometheus.Registry, name string) float64 {
	mfs, _ := reg.Gather()
	for _, mf := range mfs {
		if mf.GetName() == name && len(mf.Metric) > 0 {
			return mf.Metric[0].GetCounter().GetValue()
		}
	}
	return 0
}

// TestClusterReshardWhileSending moves the busy shard's slot to another
// master (MIGRATE, as redis-cli --cluster reshard does) under steady sends:
// sends that hit the migration (ASK, TRYAGAIN) are retried, nothing is
// lost or reported lost, no seq is issued twice, every message is saved
// exactly once, and accepting continues on the new owner.
func TestClusterReshardWhileSending(t *testing.T) {
	c, tp := clusterTopo(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	e, logs, _ := failoverEnv(t, tp)
	const busy = 0
	busyKey := e.keys.ToSave(busy)
	stopPipeline := e.start("n1")
	l := startLoad(t, e, 4)
	l.waitCount(t, busy, 60, 60*time.Second)
	from, err := c.MasterOf(ctx, busyKey)
	if err != nil {
		t.Fatal(err)
	}
	to, err := c.MoveSlot(ctx, busyKey)
	if err != nil {
		l.end()
		t.Fatal(err)
	}
	moved := l.count(busy)
	l.waitCount(t, busy, moved+60, 60*time.Second)
	l.end()
	t.Logf("slot %d moved %s -> %s; errors while sending: %v", redistest.Slot(busyKey), from.Addr, to.Addr, l.errs)

	err = redistest.Poll(60*time.Second, func() error {
		saved := e.savedClients()
		for cl := range l.acc {
			if saved[cl] != 1 {
				return fmt.Errorf("%s saved %d times", cl, saved[cl])
			}
		}
		return nil
	})
	stopPipeline()
	if err != nil {
		t.Fatal(err)
	}
	if lost := lostLogged(logs); len(lost) > 0 {
		t.Fatalf("a reshard loses nothing, yet %d reported lost:\n%s", len(lost), logs.String())
	}
	if !strings.Contains(logs.String(), "no accepted message lost on shard") {
		t.Errorf("the lost check did not run after the shard changed server:\n%s", logs.String())
	}
}

// BenchmarkFailoverTime kills the master of a busy shard under steady sends
// once per iteration and measures the time from the SIGKILL to the end of
// the first accept on that shard that started after it; the old master
// rejoins as a replica before the next kill. Reports p50 and max in ms.
// Run: go test -run '^$' -bench FailoverTime -benchtime 5x ./workers
func BenchmarkFailoverTime(b *testing.B) {
	for _, name := range []string{"cluster", "sentinel"} {
		b.Run(name, func(b *testing.B) {
			var tp topo
			if name == "cluster" {
				_, tp = clusterTopo(b)
			} else {
				tp = sentinelTopo(b)
			}
			benchFailover(b, tp)
		})
	}
}

func benchFailover(b *testing.B, tp topo) {
	ctx := context.Background()
	rdb, err := store.NewRedisClient(tp.cfg, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer rdb.Close()
	var times []time.Duration
	for i := 0; i < b.N; i++ {
		e := newEnvOn(b, nil, rdb, storetest.RandomName("fb"))
		l := startLoad(b, e, 4)
		busyKey := e.keys.ToSave(0)
		if err := redistest.Poll(60*time.Second, func() error {
			if l.count(0) < 20 {
				return fmt.Errorf("warming up")
			}
			return nil
		}); err != nil {
			b.Fatal(err)
		}
		old, err := tp.masterOf(ctx, busyKey)
		if err != nil {
			b.Fatal(err)
		}
		old.Kill()
		killed := time.Now()
		l.mu.Lock()
		l.watchShard, l.watchFrom = 0, killed
		l.mu.Unlock()
		err = redistest.Poll(60*time.Second, func() error {
			l.mu.Lock()
			defer l.mu.Unlock()
			if l.resumed.IsZero() {
				return fmt.Errorf("no accept on the shard since the kill")
			}
			return nil
		})
		l.end()
		if err != nil {
			b.Fatal(err)
		}
		times = append(times, l.resumed.Sub(killed))
		if _, err := tp.waitPromoted(ctx, busyKey, old); err != nil {
			b.Fatal(err)
		}
		if err := tp.restart(ctx, old); err != nil {
			b.Fatal(err)
		}
	}
	slices.Sort(times)
	b.ReportMetric(float64(times[len(times)/2].Milliseconds()), "p50_ms")
	b.ReportMetric(float64(times[len(times)-1].Milliseconds()), "max_ms")
	b.Logf("kill -> first accepted send: %v", times)
}

// TestAcceptReplicasWaitsForAReplica: with two_phase.accept_replicas 1 an
// accept is answered only once the replica has its writes; when the
// replica stops receiving, the send is refused with server_busy (the write
// stays on the master) and the client's retry, once the replica is back,
// gets the original message.
func TestAcceptReplicasWaitsForAReplica(t *testing.T) {
	tp := sentinelTopo(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	rdb, err := store.NewRedisClient(tp.cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	prefix := storetest.RandomName("w")
	t.Cleanup(func() { storetest.DeletePrefix(rdb, prefix); _ = rdb.Close() })
	e := newEnvOn(t, nil, rdb, prefix, streams.WithReplicas(1, 200*time.Millisecond))
	accept := func(client string) (streams.Accepted, error) {
		m := domain.Message{ServerMsgID: "srv-" + client, ClientMsgID: client, ConversationID: domain.SingleConversationID("a", "b"),
			SenderID: "a", RecvID: "b", SessionType: domain.SessionSingle, MsgType: domain.MsgText, Content: domain.Content{Text: "x"}}
		return e.acc.Accept(ctx, streams.AcceptRequest{Msg: m, Route: streams.SaveFirst, Append: true})
	}
	if _, err := accept("c1"); err != nil {
		t.Fatalf("accept with the replica in sync: %v", err)
	}
	master, err := tp.masterOf(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	reps, err := redistest.ReplicaAddrs(ctx, master.Addr)
	if err != nil || len(reps) != 1 {
		t.Fatalf("replicas: %v %v", reps, err)
	}
	restore, err := redistest.CutReplication(ctx, reps[0], master.Addr)
	if err != nil {
		t.Fatal(err)
	}
	_, err = accept("c2")
	restore()
	if !errors.Is(err, domain.ErrServerBusy) {
		t.Fatalf("accept without a replica: %v, want server busy", err)
	}
	var a streams.Accepted
	if err := redistest.Poll(30*time.Second, func() error { a, err = accept("c2"); return err }); err != nil {
		t.Fatalf("retry after the replica is back: %v", err)
	}
	if !a.Duplicate || a.ServerMsgID != "srv-c2" {
		t.Fatalf("retry got %+v; want the original (its write stayed on the master)", a)
	}
}
