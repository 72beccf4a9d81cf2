package chat

import (
	"context"
	"hash/maphash"
	"log/slog"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/nexo-im/nexo/domain"
)

// GroupFanout delivers group messages (workers.GroupFanout).
type GroupFanout interface {
	FanoutGroup(ctx context.Context, m *domain.Message, exceptConn string) error
}

// AsyncFanout is the synchronous path's push queue: Deliver never blocks;
// when the bounded queue is full the push is dropped and counted, and
// clients catch up by pull (the message is already saved). A conversation's
// pushes always go through the same lane (one queue, one worker), so they
// leave in the order they were queued: one sender's in seq order (its
// requests are handled in order); two senders' concurrent messages in the
// order their saves finished, which clients put in seq order
// (docs/protocol.md).
type AsyncFanout struct {
	lanes   []*domain.Queue[fanoutJob]
	seed    maphash.Seed
	push    *Pusher
	groups  GroupFanout
	filter  PushFilter
	dropped prometheus.Counter
	log     *slog.Logger
}

// fanoutJob holds its message by pointer: a queued push costs one copy of
// its message and a slot of 24 bytes.
type fanoutJob struct {
	m          *domain.Message
	exceptConn string
}

// PushFilter tells whether a user wants no push for a single chat
// (recv_msg_opt 1), answered from memory (services/sync.NoPushCache).
type PushFilter interface {
	NoPush(ctx context.Context, userID, conversationID string) bool
}

// NewAsyncFanout returns a fanout queue of size entries in all, drained by
// workers lanes (push.workers; at least 1) once Run runs. groups may be nil
// until group chat is wired; filter nil pushes every single chat to its
// receiver.
func NewAsyncFanout(size, workers int, push *Pusher, groups GroupFanout, filter PushFilter, reg prometheus.Registerer, log *slog.Logger) *AsyncFanout {
	// Each lane's storage follows what it queues (domain.Queue): with
	// two-phase on (the default) the synchronous path queues nothing.
	lanes := make([]*domain.Queue[fanoutJob], max(workers, 1))
	for i := range lanes {
		lanes[i] = domain.NewQueue[fanoutJob](size / len(lanes))
	}
	a := &AsyncFanout{
		lanes: lanes, seed: maphash.MakeSeed(), push: push, groups: groups, filter: filter, log: log,
		dropped: prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: "nexo", Name: "push_dropped_total",
			Help: "Pushes of the synchronous path dropped because the push queue was full (clients pull).",
		}),
	}
	if reg != nil {
		reg.MustRegister(a.dropped)
	}
	return a
}

// Deliver queues the pushes of a saved message.
func (a *AsyncFanout) Deliver(m *domain.Message, exceptConn string) {
	lane := a.lanes[maphash.String(a.seed, m.ConversationID)%uint64(len(a.lanes))]
	c := *m // the caller keeps m
	if !lane.Put(fanoutJob{m: &c, exceptConn: exceptConn}) {
		a.dropped.Inc()
	}
}

// Run drains the lanes, one goroutine each, until ctx is cancelled.
func (a *AsyncFanout) Run(ctx context.Context) error {
	done := make(chan struct{})
	for _, lane := range a.lanes {
		go func() {
			defer func() { done <- struct{}{} }()
			for ctx.Err() == nil {
				j, ok := lane.Take()
				if !ok {
					select {
					case <-ctx.Done():
					case <-lane.Ready():
					}
					continue
				}
				a.deliver(ctx, &j)
			}
		}()
	}
	for range a.lanes {
		<-done
	}
	return nil
}

func (a *AsyncFanout) deliver(ctx context.Context, j *fanoutJob) {
	m := j.m
	if m.SessionType == domain.SessionGroup && a.groups != nil {
		if err := a.groups.FanoutGroup(ctx, m, j.exceptConn); err != nil {
			a.log.Warn("group fanout failed; members will pull", "server_msg_id", m.ServerMsgID,
				"conversation_id", m.ConversationID, "seq", m.Seq, "err", err)
		}
		return
	}
	to := m.SingleRecipients()
	if a.filter != nil && m.RecvID != m.SenderID && a.filter.NoPush(ctx, m.RecvID, m.ConversationID) {
		to = []string{m.SenderID} // recv_msg_opt 1: the receiver pulls
	}
	if m.SessionType == domain.SessionGroup {
		to = []string{m.SenderID} // group chat not wired: the sender's other devices only
	}
	a.push.PushMessage(ctx, m, to, j.exceptConn)
}
