package sync

import (
	"context"
	"errors"
	"log/slog"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"

	"github.com/nexo-im/nexo/configs"
	"github.com/nexo-im/nexo/domain"
	"github.com/nexo-im/nexo/services/chat"
	"github.com/nexo-im/nexo/store"
)

// ResendReader reads what a member has not acknowledged
// (store.ConversationRepo): the conversations with visible saved messages
// above its delivered cursor, newest first, and the messages of seq ranges.
type ResendReader interface {
	Undelivered(ctx context.Context, ownerID string) ([]store.ConversationState, error)
	// MessagesFor leaves out the messages viewer deleted for itself.
	MessagesFor(ctx context.Context, viewer string, ranges []store.SeqRange) ([]domain.Message, error)
}

// Target is a connection to resend to (ws.PushConn): Send queues a push
// without blocking and reports false when the connection no longer takes
// it. A target that also reports its outbound queue (Pending() int: frames
// queued or being written) is paced: the resend never has more than
// maxQueued frames waiting on it, so it cannot overflow ws.send_queue.
// Without it, the resend sends at most maxQueued frames in all. A target
// that reports when it was registered (ConnectedAt() time.Time) bounds the
// resend to messages sent before that.
type Target interface {
	UserID() string
	ConnID() string
	PlatformID() int
	Send(p domain.Push) bool
}

type queueDepth interface{ Pending() int }

// connectTime is implemented by connections that know when they were
// registered (pushes reach them from then on); without it the resend's
// own start is used, a little later.
type connectTime interface{ ConnectedAt() time.Time }

// pacePoll is how often a paced resend looks at a full queue again.
const pacePoll = 2 * time.Millisecond

// ResendDeps are the Resender's collaborators and settings.
type ResendDeps struct {
	Config    configs.Sync
	Reader    ResendReader
	Writer    *CursorWriter // overlays delivered advances not written yet
	Redis     redis.UniversalClient
	Keys      store.Keys
	MaxQueued int // frames a resend may have waiting on a connection: ws.high_water / 2
	Registry  prometheus.Registerer
	Log       *slog.Logger
	Audit     *domain.Audit // nil: no audit lines
}

// Resender is offline resend: once a connection is authenticated, it
// pushes, per conversation with saved messages above the member's
// delivered_seq (within its visibility), those messages as ordinary 2001
// pushes in ascending seq order — conversations with the newest messages
// first, at most sync.resend_single_max single-chat plus
// sync.resend_group_max group messages in all — then a 2102
// {conversation_id, max_seq} for every conversation it could not send in
// full (or, with recv_msg_opt 1, did not push at all), so the client pulls
// the rest. A Redis lock per user and platform (SET NX PX
// sync.resend_lock_ttl) suppresses a second resend in a reconnect storm.
// Each resend costs two queries (conversations with cursors; the messages
// of every range at once). Only messages sent before the resend began are
// resent: later ones reach the connection by live push (a message from an
// instance whose clock runs ahead may be left to the client's pull, which
// the protocol asks for after every reconnect). The delivered cursor moves
// only when the client ACKs what it received.
type Resender struct {
	cfg       configs.Sync
	reader    ResendReader
	writer    *CursorWriter
	rdb       redis.UniversalClient
	keys      store.Keys
	maxQueued int
	sem       chan struct{}
	metrics   *resendMetrics
	log       *slog.Logger
	audit     *domain.Audit
}

// NewResender returns the resender.
func NewResender(d ResendDeps) *Resender {
	return &Resender{cfg: d.Config, reader: d.Reader, writer: d.Writer, rdb: d.Redis, keys: d.Keys,
		maxQueued: max(d.MaxQueued, 8), sem: make(chan struct{}, max(d.Config.ResendConcurrency, 1)),
		metrics: newResendMetrics(d.Registry), log: d.Log, audit: d.Audit}
}

// ResendResult says what one resend did.
type ResendResult struct {
	Locked    bool // another resend of this user and platform ran within the lock TTL
	Messages  int  // 2001 pushes queued
	Summaries int  // 2102 pushes queued
}

// OnConnect resends to t, a connection that just registered, on the
// caller's goroutine, ending early if ctx (the connection's) ends.
func (r *Resender) OnConnect(ctx context.Context, t Target) {
	if _, err := r.Resend(ctx, t); err != nil && ctx.Err() == nil {
		r.log.Warn("offline resend failed; the client pulls", "user_id", t.UserID(), "conn_id", t.ConnID(), "err", err)
	}
}

// SummaryJSON is the data of a resend's 2102 push (the same shape as the
// group notify): conversation_id holds messages up to max_seq that the
// client should pull.
type SummaryJSON struct {
	ConversationID string `json:"conversation_id"`
	MaxSeq         int64  `json:"max_seq"`
}

// plan is one conversation's part of a resend.
type plan struct {
	conv      string
	maxSeq    int64
	delivered int64          // the member's delivered cursor the resend started from
	rng       store.SeqRange // messages to push; empty when none
	more      bool           // a 2102 follows
}

// Resend runs one resend to t. Errors are the database's (nothing was
// pushed) or ctx's.
func (r *Resender) Resend(ctx context.Context, t Target) (ResendResult, error) {
	began := time.Now()
	// Messages sent after the connection registered reach it by live push;
	// resending them too would only duplicate (see docs/sync.md).
	connectedAt := began.UnixMilli()
	if c, ok := t.(connectTime); ok {
		connectedAt = c.ConnectedAt().UnixMilli()
	}
	user := t.UserID()
	if r.cfg.ResendLockTTL > 0 && r.rdb != nil {
		key := r.keys.Key("resend", user, strconv.Itoa(t.PlatformID()))
		ok, err := r.rdb.SetNX(ctx, key, "1", r.cfg.ResendLockTTL).Result()
		switch {
		case err != nil:
			r.log.Debug("resend lock unavailable; resending anyway", "user_id", user, "err", err)
		case !ok:
			r.metrics.runs.WithLabelValues("locked").Inc()
			return ResendResult{Locked: true}, nil
		}
	}
	who := domain.AuditConn(user, t.PlatformID(), t.ConnID())
	plans, msgs, err := r.load(ctx, t, user)
	if err != nil {
		r.metrics.runs.WithLabelValues("failed").Inc()
		if ctx.Err() == nil { // not a connection that closed while we loaded
			r.audit.Fail(ctx, "resend", err, who...)
		}
		return ResendResult{}, err
	}
	byConv := make(map[string][]domain.Message, len(plans))
	for _, m := range msgs {
		byConv[m.ConversationID] = append(byConv[m.ConversationID], m)
	}
	var res ResendResult
	_, paced := t.(queueDepth)
	frames := 0
	for _, p := range plans {
		var last *domain.Message // the conversation's last message pushed
		sent := 0
		for i := range byConv[p.conv] {
			if !paced && frames >= r.maxQueued {
				break
			}
			m := &byConv[p.conv][i]
			if m.SendAt > connectedAt {
				continue
			}
			// Untagged (no Msg): the resend writes its own audit lines.
			if !r.send(ctx, t, domain.Push{Kind: domain.PushMessage, Data: chat.ToJSON(m)}) {
				r.audit.Fail(ctx, "resend", errTargetGone, r.auditAttrs(who, p, m, sent)...)
				return res, ctx.Err()
			}
			last = m
			sent++
			res.Messages++
			frames++
		}
		if last != nil && r.audit.On(ctx) {
			r.audit.OK(ctx, "resend", r.auditAttrs(who, p, last, sent)...)
		}
	}
	for _, p := range plans {
		if !p.more || !paced && frames >= r.maxQueued {
			continue
		}
		if !r.send(ctx, t, domain.Push{Kind: domain.PushGroupNotify, Data: SummaryJSON{ConversationID: p.conv, MaxSeq: p.maxSeq}}) {
			return res, ctx.Err()
		}
		res.Summaries++
		frames++
	}
	r.metrics.runs.WithLabelValues("sent").Inc()
	r.metrics.messages.Add(float64(res.Messages))
	r.metrics.summaries.Add(float64(res.Summaries))
	r.metrics.latency.Observe(time.Since(began).Seconds())
	return res, nil
}

// errTargetGone is the resend audit line's err when the connection closed
// (or the resend's context ended) while messages were being queued.
var errTargetGone = errors.New("connection closed during the resend")

// auditAttrs are the keys of one conversation's resend line: the last
// message pushed (server_msg_id, seq), the connection, the delivered
// cursor the resend started from (cursor_before) and the seq it pushed up
// to (cursor_after: where the client's ACK will move the cursor; the
// resend itself moves none), and how many messages it pushed.
func (r *Resender) auditAttrs(who []slog.Attr, p plan, last *domain.Message, sent int) []slog.Attr {
	attrs := append(append(domain.AuditMsg(last), who...), domain.AuditCursor(p.delivered, last.Seq)...)
	return append(attrs, slog.Int("messages", sent))
}

// load reads what to resend under the concurrency bound: the plans, in
// push order, and their messages.
func (r *Resender) load(ctx context.Context, t Target, user string) ([]plan, []domain.Message, error) {
	select {
	case r.sem <- struct{}{}:
	case <-ctx.Done():
		return nil, nil, ctx.Err()
	}
	defer func() { <-r.sem }()
	states, err := r.reader.Undelivered(ctx, user)
	if err != nil {
		return nil, nil, err
	}
	left := map[domain.SessionType]int64{domain.SessionSingle: int64(r.cfg.ResendSingleMax), domain.SessionGroup: int64(r.cfg.ResendGroupMax)}
	if _, paced := t.(queueDepth); !paced {
		// Without pacing every frame must fit the queue at once.
		for k := range left {
			left[k] = min(left[k], int64(r.maxQueued/2))
		}
	}
	plans := make([]plan, 0, len(states))
	var ranges []store.SeqRange
	for i := range states {
		st := &states[i]
		c := st.Cursor
		if r.writer != nil {
			r.writer.Overlay(&c)
		}
		lo, hi := max(c.DeliveredSeq, st.VisibleMin()-1), st.VisibleMax()
		if hi <= lo {
			continue
		}
		n := int64(0)
		if st.RecvMsgOpt != RecvNoPush {
			n = min(hi-lo, left[st.Type])
			left[st.Type] -= n
		}
		p := plan{conv: st.ConversationID, maxSeq: hi, delivered: c.DeliveredSeq, more: lo+n < hi}
		if n > 0 {
			p.rng = store.SeqRange{ConversationID: st.ConversationID, After: lo, Upto: lo + n}
			ranges = append(ranges, p.rng)
		}
		plans = append(plans, p)
	}
	if len(ranges) == 0 {
		return plans, nil, nil
	}
	msgs, err := r.reader.MessagesFor(ctx, user, ranges)
	return plans, msgs, err
}

// send queues p on t, first waiting while a paced target has maxQueued
// frames pending. It reports false when t is gone or ctx is done.
func (r *Resender) send(ctx context.Context, t Target, p domain.Push) bool {
	if q, ok := t.(queueDepth); ok {
		var tick *time.Ticker
		for q.Pending() >= r.maxQueued {
			if tick == nil {
				tick = time.NewTicker(pacePoll)
				defer tick.Stop()
			}
			select {
			case <-ctx.Done():
				return false
			case <-tick.C:
			}
		}
	}
	return t.Send(p)
}

type resendMetrics struct {
	runs      *prometheus.CounterVec
	messages  prometheus.Counter
	summaries prometheus.Counter
	latency   prometheus.Histogram
}

func newResendMetrics(reg prometheus.Registerer) *resendMetrics {
	m := &resendMetrics{
		runs: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: "nexo", Name: "resends_total",
			Help: "Offline resends on connect, by result (sent, locked: suppressed by the per-user lock, failed)."}, []string{"result"}),
		messages: prometheus.NewCounter(prometheus.CounterOpts{Namespace: "nexo", Name: "resend_messages_total",
			Help: "Messages pushed (2001) by offline resends."}),
		summaries: prometheus.NewCounter(prometheus.CounterOpts{Namespace: "nexo", Name: "resend_summaries_total",
			Help: "2102 summaries pushed by offline resends for conversations left to pull."}),
		latency: prometheus.NewHistogram(prometheus.HistogramOpts{Namespace: "nexo", Name: "resend_seconds",
			Help: "Time of one offline resend, from connect to its last frame queued.", Buckets: prometheus.ExponentialBuckets(0.0005, 2, 16)}),
	}
	if reg != nil {
		reg.MustRegister(m.runs, m.messages, m.summaries, m.latency)
	}
	return m
}
