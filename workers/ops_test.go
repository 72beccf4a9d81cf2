package workers_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/nexo-im/nexo/domain"
	"github.com/nexo-im/nexo/store"
	"github.com/nexo-im/nexo/streams"
	"github.com/nexo-im/nexo/workers"
)

// TestStageOpsPerBatchAreConstant: the save and deliver stages make the same
// number of Redis round trips and SQL statements for a batch of one message
// as for a batch of thirty (O(1) per batch), and export them; the save's
// statements are one database round trip, and its after-save hooks'
// entries travel in its one Redis round trip.
func TestStageOpsPerBatchAreConstant(t *testing.T) {
	e := newEnv(t, nil)
	store.CountRedisOps(e.rdb)
	ctx := context.Background()
	m := workers.NewMetrics(nil)
	queue := queueHook{stream: e.keys.ToSave(0) + ":later"}
	save := workers.NewSaveHandler(workers.SaveDeps{Keys: e.keys, Redis: e.rdb, Messages: e.msgs, Seqs: e.seqs,
		Allocator: e.acc, Pusher: e.rec, Metrics: m, Log: e.log, After: queue})
	deliver := workers.NewDeliverHandler(workers.DeliverDeps{Keys: e.keys, Redis: e.rdb, Pusher: e.rec, Metrics: m, Log: e.log})
	p := workers.NewPipeline(e.rdb, e.keys, e.cfg.Streams, e.cfg.Save, "n1", save, deliver, e.log)
	if err := p.EnsureGroups(ctx); err != nil {
		t.Fatal(err)
	}

	type cost struct{ redis, db, trips int64 }
	run := func(stage workers.Stage, name, stream string, shard int, from string) (cost, string) {
		t.Helper()
		batch, err := e.rdb.XRange(ctx, stream, from, "+").Result()
		if err != nil || len(batch) == 0 {
			t.Fatalf("read %s: %d entries, %v", stream, len(batch), err)
		}
		ops := m.Ops(name)
		r0, d0, t0 := ops.Redis.Load(), ops.DB.Load(), ops.DBTrips.Load()
		if err := stage.Handle(ctx, shard, batch); err != nil {
			t.Fatal(err)
		}
		return cost{ops.Redis.Load() - r0, ops.DB.Load() - d0, ops.DBTrips.Load() - t0}, "(" + batch[len(batch)-1].ID
	}

	var saveCost, deliverCost []cost
	saveFrom, deliverFrom := "-", "-"
	sent := 0
	// The first batch warms the scripts: on a Redis that has not seen
	// them, an EVALSHA is answered NOSCRIPT and repeated as EVAL.
	for _, n := range []int{1, 1, 30} {
		var shard int
		for i := 0; i < n; i++ {
			a := e.send("alice", "bob", fmt.Sprint("m", sent), streams.SaveFirst)
			shard = a.Shard
			sent++
		}
		c, next := run(save, streams.GroupSave, e.keys.ToSave(shard), shard, saveFrom)
		saveCost, saveFrom = append(saveCost, c), next
		c, next = run(deliver, streams.GroupDeliver, e.keys.ToDeliver(shard), shard, deliverFrom)
		deliverCost, deliverFrom = append(deliverCost, c), next
	}
	saveCost, deliverCost = saveCost[1:], deliverCost[1:]
	t.Logf("save: batch of 1 %+v, batch of 30 %+v; deliver: %+v, %+v", saveCost[0], saveCost[1], deliverCost[0], deliverCost[1])
	if saveCost[0] != saveCost[1] || deliverCost[0] != deliverCost[1] {
		t.Fatalf("cost grows with the batch: save %+v, deliver %+v", saveCost, deliverCost)
	}
	if saveCost[0].db == 0 || saveCost[0].redis == 0 || deliverCost[0].redis == 0 || deliverCost[0].db != 0 {
		t.Fatalf("counters not counting: save %+v, deliver %+v", saveCost[0], deliverCost[0])
	}
	// Redis: the after-save hooks' entries travel in the commit's script.
	if saveCost[0].redis != 1 {
		t.Fatalf("save took %d Redis round trips, want 1 (commit.lua)", saveCost[0].redis)
	}
	if n, err := e.rdb.XLen(ctx, queue.stream).Result(); err != nil || n != int64(sent) {
		t.Fatalf("the hook's queue holds %d entries (%v), want one per message: %d", n, err, sent)
	}
	// MariaDB: the save's statements travel in one round trip (store.SaveBatch).
	if saveCost[0].trips != 1 {
		t.Fatalf("save took %d database round trips, want 1", saveCost[0].trips)
	}
	if got := m.StageMessages.WithLabelValues(streams.GroupSave); got == nil {
		t.Fatal("no stage_messages_total")
	}
}

// queueHook is an after-save hook like search's: one queue entry per
// saved message.
type queueHook struct{ stream string }

func (q queueHook) AfterSave(_ context.Context, msgs []domain.Message, _ []bool) ([]streams.Append, error) {
	out := make([]streams.Append, len(msgs))
	for i := range msgs {
		out[i] = streams.Append{Stream: q.stream, Values: []any{"id", msgs[i].ServerMsgID}}
	}
	return out, nil
}
