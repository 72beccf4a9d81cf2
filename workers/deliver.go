package workers

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/nexo-im/nexo/domain"
	"github.com/nexo-im/nexo/streams"
)

// GroupFanout delivers a group message to the group's online members,
// choosing the push strategy (see docs/groups.md). A returned error is
// retried; the fanout must tolerate running twice for one message.
type GroupFanout interface {
	FanoutGroup(ctx context.Context, m *domain.Message, exceptConn string) error
}

// DeliverHandler is the deliver stage: it pushes each entry of a shard's
// to_deliver stream to the recipients' online connections (single chat: the
// receiver and the sender's other connections), then in one atomic Redis
// step forwards deliver-first entries to to_save and acknowledges the batch.
type DeliverHandler struct {
	keys    streams.Keys
	rdb     redis.UniversalClient
	push    Pusher
	groups  GroupFanout
	metrics *Metrics
	log     *slog.Logger
}

// DeliverDeps are the DeliverHandler's collaborators. Groups may be nil
// until group chat is wired; group entries then reach only the sender's
// other connections.
type DeliverDeps struct {
	Keys    streams.Keys
	Redis   redis.UniversalClient
	Pusher  Pusher
	Groups  GroupFanout
	Metrics *Metrics
	Log     *slog.Logger
}

// NewDeliverHandler returns the deliver stage.
func NewDeliverHandler(d DeliverDeps) *DeliverHandler {
	return &DeliverHandler{keys: d.Keys, rdb: d.Redis, push: d.Pusher, groups: d.Groups, metrics: d.Metrics, log: d.Log}
}

// Handle delivers one batch, in stream order (so one conversation's pushes
// leave in seq order). Pushes happen before the acknowledgement: a crash in
// between pushes again after the reclaim (at-least-once).
func (h *DeliverHandler) Handle(ctx context.Context, shard int, batch []redis.XMessage) error {
	commit := streams.Commit{
		Input: h.keys.ToDeliver(shard), Group: streams.GroupDeliver, Next: h.keys.ToSave(shard), Dead: h.keys.Dead(shard),
	}
	now := time.Now().UnixMilli()
	for _, x := range batch {
		e, err := streams.Decode(x)
		if err != nil {
			h.log.Error("deliver: malformed entry dead-lettered", "entry", x.ID, "err", err)
			commit.ToDead = append(commit.ToDead, streams.DeadEntry{Fields: x.Values, Source: commit.Input, Err: err.Error()})
			commit.Ack = append(commit.Ack, x.ID)
			continue
		}
		if err := h.deliver(ctx, &e); err != nil {
			return fmt.Errorf("deliver %s (conversation_id %s, seq %d): %w", e.Msg.ServerMsgID, e.Msg.ConversationID, e.Msg.Seq, err)
		}
		if e.Route == streams.DeliverFirst {
			commit.ToNext = append(commit.ToNext, e)
		}
		commit.Ack = append(commit.Ack, e.ID)
		h.metrics.Delivered.Inc()
		if e.AcceptedAt > 0 {
			h.metrics.DeliverLag.Observe(float64(now-e.AcceptedAt) / 1000)
		}
	}
	if err := commit.Apply(ctx, h.rdb); err != nil {
		return fmt.Errorf("deliver: commit %d entries: %w", len(commit.Ack), err)
	}
	return nil
}

func (h *DeliverHandler) deliver(ctx context.Context, e *streams.Entry) error {
	m := &e.Msg
	switch m.SessionType {
	case domain.SessionSingle:
		h.push.PushMessage(ctx, m, m.SingleRecipients(), e.OriginConn)
		return nil
	case domain.SessionGroup:
		if h.groups == nil {
			h.push.PushMessage(ctx, m, []string{m.SenderID}, e.OriginConn)
			return nil
		}
		return h.groups.FanoutGroup(ctx, m, e.OriginConn)
	}
	return nil
}
