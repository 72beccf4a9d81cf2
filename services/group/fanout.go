package group

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/nexo-im/nexo/configs"
	"github.com/nexo-im/nexo/domain"
	"github.com/nexo-im/nexo/services/chat"
	"github.com/nexo-im/nexo/store"
)

// Push strategies as counted in metrics (auto resolves to one of them).
const (
	modePush   = configs.GroupPushPush
	modeNotify = configs.GroupPushNotify
	modeNone   = configs.GroupPushNone
)

// minChunk is the fewest users one push goroutine takes: below it the
// goroutine costs more than the pushes.
const minChunk = 128

// Pusher reaches the members' connections on every instance (ws.Pushes
// over the connection registry). PushToUsers never blocks on a slow
// connection and takes distinct user IDs; OnlineOf keeps the users
// connected anywhere, in their order.
type Pusher interface {
	PushToUsers(ctx context.Context, userIDs []string, p domain.Push, exceptConn string) int
	OnlineOf(ctx context.Context, userIDs []string) []string
}

// sharedPusher is a Pusher that can encode a push once for many calls
// (ws.Pushes.Shared); the fanout's goroutines then share one frame instead
// of encoding it once per part.
type sharedPusher interface {
	Shared(p domain.Push) (send func(ctx context.Context, userIDs []string, exceptConn string) int, ok bool)
}

// NotifyJSON is the data of a 2102 push: the conversation has messages up
// to max_seq; the client pulls what it lacks.
type NotifyJSON struct {
	ConversationID string `json:"conversation_id"`
	MaxSeq         int64  `json:"max_seq"`
}

// Fanout delivers group messages to online members; it implements
// workers.GroupFanout and chat.GroupFanout.
type Fanout struct {
	members *Members
	pushes  Pusher
	cfg     configs.GroupPush
	metrics *fanoutMetrics
}

// NewFanout returns the group fanout over the member lookups and pushes;
// cfg is group.push; reg (nil: none) registers its metrics.
func NewFanout(members *Members, pushes Pusher, cfg configs.GroupPush, reg prometheus.Registerer) *Fanout {
	return &Fanout{members: members, pushes: pushes, cfg: cfg, metrics: newFanoutMetrics(reg)}
}

// FanoutGroup pushes m to the online members who may see it, except the
// connection exceptConn (the sender's sending connection):
//
//   - members who are not active are skipped, and so is a member whose
//     bounds exclude m.Seq (joined after it, or capped before it); the
//     users a join or leave notification is about get it anyway (see
//     notificationTargets) unless they have since joined again;
//   - recv_msg_opt 1 (no push) is skipped, except for the sender's own
//     other devices; 0 and 2 get the same frame (2 = the client shows no
//     notification);
//   - the strategy (group.push.mode; auto by thresholds) picks the body
//     (2001), a 2102 {conversation_id, max_seq}, or nothing;
//   - the push is handed over by at most group.push.workers goroutines;
//     FanoutGroup returns when every frame is queued, so one
//     conversation's frames leave in seq order.
//
// Errors are transient lookup failures (the deliver stage retries); a
// group that does not exist is not an error.
func (f *Fanout) FanoutGroup(ctx context.Context, m *domain.Message, exceptConn string) error {
	began := time.Now()
	s, err := f.members.get(ctx, m.GroupID)
	if err != nil {
		return fmt.Errorf("fanout %s seq %d: %w", m.ConversationID, m.Seq, err)
	}
	targets := notificationTargets(m)
	recipients, members := f.recipients(s, m, targets)
	online := f.pushes.OnlineOf(ctx, recipients)
	mode := f.choose(members, len(online))
	f.metrics.modes.WithLabelValues(mode).Inc()
	if mode == modeNone || len(online) == 0 {
		return nil
	}
	n := f.push(ctx, online, pushOf(mode, m), exceptConn)
	f.metrics.frames.Add(float64(n))
	f.metrics.latency.Observe(time.Since(began).Seconds())
	return nil
}

// recipients lists who may get m, and the group's size for the strategy.
func (f *Fanout) recipients(s *snapshot, m *domain.Message, targets []string) ([]string, int) {
	var members map[string]store.MemberState
	size := len(targets)
	if s.state != nil {
		members, size = s.state.Members, max(s.active, len(targets))
	}
	out := make([]string, 0, size)
	wants := func(id string, opt int) bool { return opt != recvNoPush || id == m.SenderID }
	for id, mem := range members {
		visible := mem.Active() && mem.JoinSeq <= m.Seq && (mem.CapSeq == 0 || m.Seq <= mem.CapSeq)
		if visible && wants(id, mem.RecvMsgOpt) {
			out = append(out, id)
		}
	}
	for _, id := range targets {
		mem, known := members[id]
		switch {
		case known && mem.Active() && mem.JoinSeq <= m.Seq:
			continue // already decided above
		case known && mem.JoinSeq > m.Seq:
			continue // joined again after this notification
		case known && !wants(id, mem.RecvMsgOpt):
			continue
		}
		out = append(out, id)
	}
	return dedupe(out, len(targets) > 0), size
}

// recvNoPush is conversations.recv_msg_opt 1: do not push.
const recvNoPush = 1

// dedupe removes repeated IDs; only notification targets can repeat one.
func dedupe(ids []string, needed bool) []string {
	if !needed {
		return ids
	}
	seen := make(map[string]bool, len(ids))
	out := ids[:0]
	for _, id := range ids {
		if !seen[id] {
			seen[id] = true
			out = append(out, id)
		}
	}
	return out
}

// choose applies group.push.mode: auto is none from
// huge_group_no_notify_size members or notify_max_online_user online,
// else notify from group_size_threshold members or online_user_threshold
// online, else push.
func (f *Fanout) choose(members, online int) string {
	c := f.cfg
	switch c.Mode {
	case configs.GroupPushPush, configs.GroupPushNotify, configs.GroupPushNone:
		return c.Mode
	}
	switch {
	case members >= c.HugeGroupNoNotifySize || online >= c.NotifyMaxOnlineUser:
		return modeNone
	case members >= c.GroupSizeThreshold || online >= c.OnlineUserThreshold:
		return modeNotify
	}
	return modePush
}

// pushOf is the push of m for mode, naming m for the push audit lines (a
// 2102 notify is audited as the push of the message it announces).
func pushOf(mode string, m *domain.Message) domain.Push {
	ref := domain.RefOf(m)
	if mode == modeNotify {
		return domain.Push{Kind: domain.PushGroupNotify, Data: NotifyJSON{ConversationID: m.ConversationID, MaxSeq: m.Seq}, Msg: &ref}
	}
	return domain.Push{Kind: domain.PushMessage, Data: chat.ToJSON(m), Msg: &ref}
}

// push hands p to users' connections with at most cfg.Workers goroutines
// and returns how many connections queued it.
func (f *Fanout) push(ctx context.Context, users []string, p domain.Push, exceptConn string) int {
	chunk := max(minChunk, (len(users)+f.cfg.Workers-1)/max(f.cfg.Workers, 1))
	if len(users) <= chunk {
		return f.pushes.PushToUsers(ctx, users, p, exceptConn)
	}
	send := func(part []string) int { return f.pushes.PushToUsers(ctx, part, p, exceptConn) }
	if sp, ok := f.pushes.(sharedPusher); ok {
		shared, ok := sp.Shared(p)
		if !ok {
			return 0
		}
		send = func(part []string) int { return shared(ctx, part, exceptConn) }
	}
	var n atomic.Int64
	var wg sync.WaitGroup
	for start := 0; start < len(users); start += chunk {
		part := users[start:min(start+chunk, len(users))]
		wg.Go(func() { n.Add(int64(send(part))) })
	}
	wg.Wait()
	return int(n.Load())
}
