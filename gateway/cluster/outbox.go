package cluster

import (
	"context"
	"time"

	"github.com/nexo-im/nexo/store"
	"github.com/nexo-im/nexo/streams"
)

// The outbox batches remote pushes: PushToUsers delivers to local
// connections at once and queues the rest; one flusher takes everything
// queued (up to outboxBatch items), looks up the recipients' instances
// once (pipelined) and publishes one envelope per target instance carrying
// all of that instance's frames. Under load a batch holds what the deliver
// and save stages pushed during the previous flush, so the Redis round
// trips per message fall with the rate; when idle each push flushes alone,
// at once. The rule (docs/cluster.md): one envelope per target instance
// per batch.

const (
	// outboxSize bounds the queue (a domain.Queue: its storage follows
	// what is queued); a push that finds it full is routed synchronously,
	// as before batching.
	outboxSize = 16384
	// outboxBatch bounds one flush.
	outboxBatch = 512
	// kindPushes is an envelope of several pushes (payload:
	// streams.EncodeBusPushes).
	kindPushes = "pushes"
)

// flushLoop publishes queued pushes until ctx ends, then publishes what is
// still queued (bounded by the stop timeout) and returns.
func (r *Relay) flushLoop(ctx context.Context) {
	batch := make([]streams.BusPush, 0, outboxBatch)
	for {
		select {
		case <-ctx.Done():
			dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
			for {
				batch = r.out.TakeUpTo(batch[:0], outboxBatch)
				if len(batch) == 0 || dctx.Err() != nil {
					cancel()
					return
				}
				r.flush(dctx, batch)
			}
		case <-r.out.Ready():
			for ctx.Err() == nil {
				if batch = r.out.TakeUpTo(batch[:0], outboxBatch); len(batch) == 0 {
					break
				}
				r.flush(ctx, batch)
			}
		}
		clear(batch) // hold no frame while idle
	}
}

// flush routes batch: one presence lookup for every recipient, one
// envelope per target instance.
func (r *Relay) flush(ctx context.Context, batch []streams.BusPush) {
	var users []string
	index := map[string]int{}
	for _, it := range batch {
		for _, u := range it.Users {
			if _, ok := index[u]; !ok {
				index[u] = len(users)
				users = append(users, u)
			}
		}
	}
	at, err := r.presence.InstancesOf(ctx, users)
	if err != nil {
		r.m.errors.WithLabelValues("presence").Inc()
		r.log.Warn("cluster: presence lookup failed; remote recipients will catch up by resend and pull", "users", len(users), "err", err)
		return
	}
	self := r.membership.Incarnation()
	perInstance := map[string][]streams.BusPush{}
	for _, it := range batch {
		// The item's users, split by the instance holding them.
		var split map[string][]string
		for _, u := range it.Users {
			for _, in := range at[index[u]] {
				if in == self {
					continue
				}
				if split == nil {
					split = make(map[string][]string, 2)
				}
				split[in] = append(split[in], u)
			}
		}
		for in, us := range split {
			part := it
			part.Users = us
			perInstance[in] = append(perInstance[in], part)
		}
	}
	r.m.batch.Observe(float64(len(batch)))
	for in, items := range perInstance {
		id, _, _ := store.ParseIncarnation(in)
		r.publish(ctx, id, streams.BusEnvelope{Kind: kindPushes, Payload: streams.EncodeBusPushes(items)})
	}
}
