package workers

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/nexo-im/nexo/domain"
	"github.com/nexo-im/nexo/store"
	"github.com/nexo-im/nexo/streams"
)

// GroupFanout delivers a group message to the group's online members,
// choosing the push strategy (see docs/groups.md). A returned error is
// retried; the fanout must tolerate running twice for one message.
type GroupFanout interface {
	FanoutGroup(ctx context.Context, m *domain.Message, exceptConn string) error
}

// PushFilter tells whether a user wants no push for a single chat
// (recv_msg_opt 1). It is read for every single-chat message, so an
// implementation answers from memory (services/sync.NoPushCache).
type PushFilter interface {
	NoPush(ctx context.Context, userID, conversationID string) bool
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
	filter  PushFilter
	metrics *Metrics
	log     *slog.Logger
	limited *domain.RateLog
	audit   *domain.Audit
	direct  directState
}

// DeliverDeps are the DeliverHandler's collaborators. Groups may be nil
// until group chat is wired; group entries then reach only the sender's
// other connections.
type DeliverDeps struct {
	Keys   streams.Keys
	Redis  redis.UniversalClient
	Pusher Pusher
	Groups GroupFanout
	// Filter may be nil: every recipient gets single-chat pushes.
	Filter  PushFilter
	Metrics *Metrics
	Log     *slog.Logger
	Audit   *domain.Audit // nil: no audit lines
}

// NewDeliverHandler returns the deliver stage.
func NewDeliverHandler(d DeliverDeps) *DeliverHandler {
	return &DeliverHandler{keys: d.Keys, rdb: d.Redis, push: d.Pusher, groups: d.Groups, filter: d.Filter, metrics: d.Metrics, log: d.Log, audit: d.Audit,
		limited: newDeadLines(d.Log), direct: directState{waiting: map[int]string{}}}
}

// Handle delivers one batch, in stream order (so one conversation's pushes
// leave in seq order). Pushes happen before the acknowledgement: a crash in
// between pushes again after the reclaim (at-least-once). A malformed entry
// is returned in streams.Failures, permanent (dead-lettered); a push that
// fails retries the whole batch.
func (h *DeliverHandler) Handle(ctx context.Context, shard int, batch []redis.XMessage) error {
	ctx = store.WithOpCounter(ctx, h.metrics.Ops(streams.GroupDeliver))
	h.metrics.StageMessages.WithLabelValues(streams.GroupDeliver).Add(float64(len(batch)))
	commit := streams.Commit{
		Input: h.keys.ToDeliver(shard), Group: h.keys.DeliverGroup(), Next: h.keys.ToSave(shard),
	}
	now := time.Now().UnixMilli()
	failures := streams.Failures{}
	for _, x := range batch {
		e, ok := decode(ctx, x, "deliver", failures, h.limited)
		if !ok {
			continue
		}
		if err := h.deliverEntry(ctx, &e, now); err != nil {
			return err
		}
		if e.Route == streams.DeliverFirst {
			commit.ToNext = append(commit.ToNext, e)
		} else {
			h.direct.pushed(shard, e.Msg.ServerMsgID)
		}
		commit.Ack = append(commit.Ack, e.ID)
	}
	if err := commit.Apply(ctx, h.rdb); err != nil {
		h.metrics.DeliverFailures.Inc()
		h.metrics.PublishFailures.WithLabelValues("deliver").Inc()
		return fmt.Errorf("deliver: commit %d entries: %w", len(commit.Ack), err)
	}
	return failures.Err()
}

// deliverEntry pushes one entry and counts it (now: Unix ms, for the
// accepted-to-delivered lag). The error names the message.
func (h *DeliverHandler) deliverEntry(ctx context.Context, e *streams.Entry, now int64) error {
	if err := h.deliver(ctx, e); err != nil {
		h.metrics.DeliverFailures.Inc()
		h.audit.Fail(ctx, "deliver", err, deliverAttrs(e)...)
		return fmt.Errorf("deliver %s (conversation_id %s, seq %d): %w", e.Msg.ServerMsgID, e.Msg.ConversationID, e.Msg.Seq, err)
	}
	h.metrics.Delivered.Inc()
	if h.audit.On(ctx) {
		h.audit.OK(ctx, "deliver", deliverAttrs(e)...)
	}
	if e.AcceptedAt > 0 {
		h.metrics.DeliverLag.Observe(float64(now-e.AcceptedAt) / 1000)
	}
	return nil
}

func (h *DeliverHandler) deliver(ctx context.Context, e *streams.Entry) error {
	m := &e.Msg
	switch m.SessionType {
	case domain.SessionSingle:
		h.push.PushMessage(ctx, m, h.singleRecipients(ctx, m), e.OriginConn)
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

// singleRecipients are the users a single-chat message is pushed to: the
// receiver, unless it set the conversation to recv_msg_opt 1 (no push; it
// pulls, as for group chat), and the sender's other connections.
func (h *DeliverHandler) singleRecipients(ctx context.Context, m *domain.Message) []string {
	if h.filter == nil || m.RecvID == m.SenderID || !h.filter.NoPush(ctx, m.RecvID, m.ConversationID) {
		return m.SingleRecipients()
	}
	return []string{m.SenderID}
}

// deliverAttrs are the keys of a deliver audit line: the message, its
// sender (user_id) and sending connection (conn_id; "" for HTTP). Each
// recipient connection's push has its own line (point push, written by
// the connection registry).
func deliverAttrs(e *streams.Entry) []slog.Attr {
	return append(domain.AuditMsg(&e.Msg), slog.String("user_id", e.Msg.SenderID), slog.String("conn_id", e.OriginConn))
}
