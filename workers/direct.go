package workers

import (
	"context"
	"sync"
	"time"

	"github.com/nexo-im/nexo/streams"
)

// directState tells, per shard, whether the save stage may push a saved
// message itself instead of forwarding it through to_deliver, without
// overtaking a message of the same shard still waiting there: pushes of
// one conversation must leave in seq order (docs/pipeline.md, "Direct
// delivery after the save").
//
// A shard starts forwarding each time it starts on this instance (another
// instance may have left entries in its to_deliver); it goes direct once
// this instance's deliver stage has pushed the last entry the save stage
// forwarded, and forwards again from a message whose push failed until
// that one has gone through the deliver stage.
type directState struct {
	mu sync.Mutex
	// waiting: per shard not yet direct, the server_msg_id of the last
	// entry forwarded and not yet pushed by the deliver stage ("" when
	// none was forwarded since the shard started here).
	waiting map[int]string
}

func (d *directState) start(shard int) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.waiting[shard] = ""
}

func (d *directState) direct(shard int) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	_, waiting := d.waiting[shard]
	return !waiting
}

func (d *directState) forwarded(shard int, serverMsgID string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.waiting[shard] = serverMsgID
}

// pushed hears of every save-first entry the deliver stage pushed.
func (d *directState) pushed(shard int, serverMsgID string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if id, ok := d.waiting[shard]; ok && id == serverMsgID {
		delete(d.waiting, shard)
	}
}

// ShardStarted is called by the Pipeline each time shard's consumers start
// on this instance, before either stage runs: the save stage forwards
// through to_deliver until the deliver stage has caught up (directState).
func (h *DeliverHandler) ShardStarted(shard int) { h.direct.start(shard) }

// DeliverSaved is the deliver stage's work for saved save-first entries,
// done by the save stage between its commit to the database and its Redis
// commit, which then forwards to to_deliver only what this returns:
// entries to push in seq order behind one not yet pushed, or from the
// first whose push failed (it is retried by the deliver stage, as any
// failed push). A crash before the Redis commit saves the batch again and
// pushes it again (at-least-once, as through to_deliver). entries are in
// stream order; the returned slice shares their array.
func (h *DeliverHandler) DeliverSaved(ctx context.Context, shard int, entries []streams.Entry) []streams.Entry {
	if len(entries) == 0 {
		return nil
	}
	if !h.direct.direct(shard) {
		h.direct.forwarded(shard, entries[len(entries)-1].Msg.ServerMsgID)
		return entries
	}
	now := time.Now().UnixMilli()
	for i := range entries {
		if err := h.deliverEntry(ctx, &entries[i], now); err != nil {
			h.limited.Warn(ctx, "direct delivery failed: forwarded to the deliver stage", "err", err)
			rest := entries[i:]
			h.direct.forwarded(shard, rest[len(rest)-1].Msg.ServerMsgID)
			return rest
		}
		h.metrics.DirectDeliveries.Inc()
	}
	return nil
}
