package group_test

import (
	"context"
	"encoding/json"
	"fmt"
	"hash/maphash"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/nexo-im/nexo/configs"
	"github.com/nexo-im/nexo/domain"
	"github.com/nexo-im/nexo/gateway/ws"
	"github.com/nexo-im/nexo/services/chat"
	"github.com/nexo-im/nexo/services/group"
	"github.com/nexo-im/nexo/store"
	"github.com/nexo-im/nexo/streams"
	"github.com/nexo-im/nexo/workers"
)

// benchRegistry mimics ws.Server's registry on the push path: user IDs
// sharded over 64 RWMutex-guarded maps, one buffered queue per connection,
// a non-blocking enqueue per frame, and one writer goroutine per
// connection draining its queue (standing in for the socket write). It
// records when the last connection of a message queued its frame.
type benchRegistry struct {
	seed   maphash.Seed
	shards [64]struct {
		mu    sync.RWMutex
		conns map[string][]chan ws.Frame
	}
	want    int64      // connections per message
	pending sync.Map   // seq -> *atomic.Int64 frames still expected
	done    chan int64 // seq whose last frame was queued
	dropped atomic.Int64
	stop    chan struct{}
	wg      sync.WaitGroup
}

func newBenchRegistry(users []string) *benchRegistry {
	r := &benchRegistry{seed: maphash.MakeSeed(), want: int64(len(users)), done: make(chan int64, 1<<16), stop: make(chan struct{})}
	for i := range r.shards {
		r.shards[i].conns = map[string][]chan ws.Frame{}
	}
	for _, u := range users {
		q := make(chan ws.Frame, 256)
		sh := &r.shards[maphash.String(r.seed, u)%64]
		sh.conns[u] = append(sh.conns[u], q)
		r.wg.Go(func() {
			for {
				select {
				case <-q:
				case <-r.stop:
					return
				}
			}
		})
	}
	return r
}

func (r *benchRegistry) close() { close(r.stop); r.wg.Wait() }

func (r *benchRegistry) expect(seq int64) {
	n := &atomic.Int64{}
	n.Store(r.want)
	r.pending.Store(seq, n)
}

func (r *benchRegistry) PushToUsers(_ context.Context, userIDs []string, f ws.Frame, exceptConn string) int {
	var d struct {
		Data struct {
			Seq    int64 `json:"seq"`
			MaxSeq int64 `json:"max_seq"`
		} `json:"data"`
	}
	_ = json.Unmarshal(f.Bytes(), &d)
	seq := max(d.Data.Seq, d.Data.MaxSeq)
	n := 0
	for _, u := range userIDs {
		sh := &r.shards[maphash.String(r.seed, u)%64]
		sh.mu.RLock()
		for _, q := range sh.conns[u] {
			select {
			case q <- f:
				n++
			default:
				r.dropped.Add(1)
			}
		}
		sh.mu.RUnlock()
	}
	if p, ok := r.pending.Load(seq); ok && p.(*atomic.Int64).Add(-int64(n)) == 0 {
		r.done <- seq
	}
	return n
}

func (r *benchRegistry) PushToUser(ctx context.Context, userID string, f ws.Frame, exceptConn string) int {
	return 0 // ACK pushes: not measured
}

func (r *benchRegistry) Online(userID string) bool {
	sh := &r.shards[maphash.String(r.seed, userID)%64]
	sh.mu.RLock()
	defer sh.mu.RUnlock()
	return len(sh.conns[userID]) > 0
}

// PushToConn and ConnCount complete ws.Registry for ws.NewPushes; the
// pushes under test go to users, not to one connection.
func (r *benchRegistry) PushToConn(ctx context.Context, userID, _ string, f ws.Frame) bool {
	return r.PushToUser(ctx, userID, f, "") > 0
}

func (r *benchRegistry) ConnCount() int { return 0 }

func percentile(d []time.Duration, p float64) time.Duration {
	slices.Sort(d)
	return d[min(len(d)-1, int(float64(len(d))*p))]
}

func reportLatency(b *testing.B, lat []time.Duration, frames int64, elapsed time.Duration) {
	b.ReportMetric(float64(percentile(lat, 0.50).Microseconds()), "p50-µs")
	b.ReportMetric(float64(percentile(lat, 0.99).Microseconds()), "p99-µs")
	b.ReportMetric(float64(frames)/elapsed.Seconds(), "pushes/s")
}

func reportHitRate(b *testing.B, reg *prometheus.Registry) {
	mfs, _ := reg.Gather()
	var hit, all float64
	for _, mf := range mfs {
		if mf.GetName() != "nexo_group_member_cache_lookups_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			v := m.GetCounter().GetValue()
			all += v
			if labelIs(m, "local") || labelIs(m, "redis") {
				hit += v
			}
		}
	}
	if all > 0 {
		b.ReportMetric(100*hit/all, "cache-hit-%")
	}
}

// BenchmarkGroupFanout500Online measures FanoutGroup alone for a
// 500-member group with every member online: from its start to the last
// member's frame queued (the call returns then), with the member lookup
// served by the cache as on the send path. Registry: benchRegistry.
func BenchmarkGroupFanout500Online(b *testing.B) {
	for _, mode := range []string{configs.GroupPushPush, configs.GroupPushNotify} {
		b.Run(mode, func(b *testing.B) {
			e := newEnvTB(b)
			reg := prometheus.NewRegistry()
			ids := userIDs("u", 500)
			e.addUsers(ids...)
			g := must(e.svc.Create(bg, ids[0], group.CreateRequest{Name: "bench", MemberIDs: ids[1:]}))(b)
			registry := newBenchRegistry(ids)
			defer registry.close()
			members := group.NewMembers(e.repo, e.cache, e.cfg.Group, reg, quiet)
			push := e.cfg.Group.Push
			push.Mode = mode
			f := group.NewFanout(members, ws.NewPushes(registry, quiet), push, nil)
			lat := make([]time.Duration, 0, b.N)
			b.ResetTimer()
			began := time.Now()
			for i := 0; i < b.N; i++ {
				seq := int64(i + 2)
				registry.expect(seq)
				t0 := time.Now()
				if err := f.FanoutGroup(bg, groupMsg(g.GroupID, ids[i%500], seq), ""); err != nil {
					b.Fatal(err)
				}
				<-registry.done
				lat = append(lat, time.Since(t0))
			}
			elapsed := time.Since(began)
			b.StopTimer()
			reportLatency(b, lat, int64(b.N)*500, elapsed)
			reportHitRate(b, reg)
			if d := registry.dropped.Load(); d > 0 {
				b.Fatalf("%d frames dropped", d)
			}
		})
	}
}

// BenchmarkGroupSendToLastMember500 measures delivery end to end through
// the real pipeline (two-phase, save-first, on MariaDB and Redis): from
// chat.Service.Send to the last of 500 online members' frame queued, one
// message at a time. Registry: benchRegistry.
func BenchmarkGroupSendToLastMember500(b *testing.B) {
	e := newEnvTB(b)
	e.cfg.Group.Push.Mode = configs.GroupPushPush
	reg := prometheus.NewRegistry()
	ids := userIDs("u", 500)
	e.addUsers(ids...)
	g := must(e.svc.Create(bg, ids[0], group.CreateRequest{Name: "bench", MemberIDs: ids[1:]}))(b)
	registry := newBenchRegistry(ids)
	defer registry.close()
	members := group.NewMembers(e.repo, e.cache, e.cfg.Group, reg, quiet)
	fanout := group.NewFanout(members, ws.NewPushes(registry, quiet), e.cfg.Group.Push, nil)

	keys := streams.NewKeys(e.keys.Prefix+"b", 2)
	cfg := e.cfg
	cfg.Streams.Block = 50 * time.Millisecond
	cfg.Save.BatchWait = 0
	seqs, msgs := store.NewSeqRepo(e.db), store.NewMessageRepo(e.db)
	acc := streams.NewAccepter(e.rdb, keys, seqs, 1000, time.Hour)
	pusher := chat.NewPusher(ws.NewPushes(registry, quiet))
	svc := chat.NewService(chat.Deps{Mode: chat.NewMode(cfg.TwoPhase), Msg: cfg.Msg, Accepter: acc, Saver: msgs, Leaser: seqs,
		Users: e.users, Groups: members, Fanout: chat.NewAsyncFanout(16, 1, pusher, fanout, nil, nil, quiet), Log: quiet})
	m := workers.NewMetrics(nil)
	save := workers.NewSaveHandler(workers.SaveDeps{Keys: keys, Redis: e.rdb, Messages: msgs, Seqs: seqs, Allocator: acc,
		Pusher: pusher, Metrics: m, Log: quiet, BatchWait: cfg.Save.BatchWait, BatchSize: cfg.Save.BatchSize})
	deliver := workers.NewDeliverHandler(workers.DeliverDeps{Keys: keys, Redis: e.rdb, Pusher: pusher, Groups: fanout, Metrics: m, Log: quiet})
	p := workers.NewPipeline(e.rdb, keys, cfg.Streams, cfg.Save, "bench", save, deliver, quiet)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { _ = p.Run(ctx); close(done) }()
	defer func() { cancel(); <-done }()

	send := func(i int) (chat.AckJSON, error) {
		return svc.Send(bg, chat.Origin{UserID: ids[(i+500)%500]}, chat.SendRequest{ClientMsgID: fmt.Sprintf("b%d", i),
			SessionType: int(domain.SessionGroup), GroupID: g.GroupID, MsgType: int(domain.MsgText), Content: chat.ContentJSON{Text: "hello"}})
	}
	// The creation notification went through the rule tests' notifier, so
	// this allocator starts at 1; the first send also warms the pipeline.
	registry.expect(1)
	if a, err := send(-1); err != nil || a.Seq != 1 {
		b.Fatalf("warm-up send: %+v %v", a, err)
	}
	<-registry.done
	next := int64(2)
	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	began := time.Now()
	for i := 0; i < b.N; i++ {
		registry.expect(next)
		t0 := time.Now()
		a, err := send(i)
		if err != nil {
			b.Fatal(err)
		}
		if a.Seq != next {
			b.Fatalf("seq %d, expected %d", a.Seq, next)
		}
		<-registry.done
		lat = append(lat, time.Since(t0))
		next++
	}
	elapsed := time.Since(began)
	b.StopTimer()
	reportLatency(b, lat, int64(b.N)*500, elapsed)
	reportHitRate(b, reg)
}

// BenchmarkCheckSend measures the permission check of a group send served
// by the cache (a version HGET and a local map lookup), against 2,000
// members, from 8 goroutines.
func BenchmarkCheckSend(b *testing.B) {
	e := newEnvTB(b)
	ids := userIDs("u", 2000)
	e.addUsers(ids...)
	g := must(e.svc.Create(bg, ids[0], group.CreateRequest{Name: "bench", MemberIDs: ids[1:]}))(b)
	reg := prometheus.NewRegistry()
	members := group.NewMembers(e.repo, e.cache, e.cfg.Group, reg, quiet)
	var i atomic.Int64
	b.SetParallelism(4)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if err := members.CheckSend(bg, g.GroupID, ids[i.Add(1)%2000]); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.StopTimer()
	reportHitRate(b, reg)
}
