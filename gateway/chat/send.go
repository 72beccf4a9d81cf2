package chat

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/nexo-im/nexo/configs"
	"github.com/nexo-im/nexo/domain"
	"github.com/nexo-im/nexo/store"
	"github.com/nexo-im/nexo/streams"
)

// Accepter is the accept step (streams.Accepter).
type Accepter interface {
	Accept(ctx context.Context, req streams.AcceptRequest) (streams.Accepted, error)
	Retire(ctx context.Context, conversationID string, seq int64) error
	MarkSaved(ctx context.Context, m *domain.Message) error
}

// Saver persists messages on the synchronous path (store.MessageRepo).
type Saver interface {
	SaveBatch(ctx context.Context, msgs []domain.Message) ([]store.SaveResult, error)
}

// Leaser leases seqs from the database (store.SeqRepo); the fallback path
// allocates with Lease(conversation, 1) while Redis is unreachable.
type Leaser interface {
	Lease(ctx context.Context, conversationID string, block int64) (domain.SeqLease, error)
}

// Users tells which user IDs exist (store.UserRepo).
type Users interface {
	Existing(ctx context.Context, ids []string) (map[string]bool, error)
}

// GroupGate decides whether a user may send to a group right now:
// domain.ErrGroupNotFound, ErrNotGroupMember, ErrMemberNotActive or
// ErrGroupDismissed when not (see docs/groups.md).
type GroupGate interface {
	CheckSend(ctx context.Context, groupID, userID string) error
}

// Fanout delivers a saved message off the request path (the synchronous
// path's pushes).
type Fanout interface {
	Deliver(m *domain.Message, exceptConn string)
}

// Service sends messages.
type Service struct {
	mode    *Mode
	msg     configs.Msg
	accept  Accepter
	saver   Saver
	leaser  Leaser
	users   *knownUsers
	groups  GroupGate
	fanout  Fanout
	log     *slog.Logger
	metrics *sendMetrics

	// fallbackSeqs: conversations that got seqs straight from the database
	// while Redis was unreachable, with the highest such seq; the Redis
	// allocator is retired above it before it issues again.
	fallbackMu   sync.Mutex
	fallbackSeqs map[string]int64
}

// Deps are the Service's collaborators.
type Deps struct {
	Mode     *Mode
	Msg      configs.Msg
	Accepter Accepter
	Saver    Saver
	Leaser   Leaser
	Users    Users
	Groups   GroupGate // nil refuses group sends with group_not_found
	Fanout   Fanout
	Log      *slog.Logger
	Registry prometheus.Registerer // nil: metrics unregistered
}

// NewService returns the message service.
func NewService(d Deps) *Service {
	return &Service{
		mode: d.Mode, msg: d.Msg, accept: d.Accepter, saver: d.Saver, leaser: d.Leaser,
		users: newKnownUsers(d.Users), groups: d.Groups, fanout: d.Fanout, log: d.Log,
		metrics: newSendMetrics(d.Registry), fallbackSeqs: map[string]int64{},
	}
}

// Send validates req from sender (the token's user, never a frame field),
// checks permission, and then — two-phase — runs the accept step and
// answers ACK(accepted), or — two-phase off, or Redis unreachable with
// fail_open — persists in the request path and answers ACK(saved). A retry
// of the same client_msg_id answers the original's ACK (ack_type saved once
// it is saved). originConn is the sending connection ("" for HTTP); its
// pushes skip it. Errors are domain errors or *wire.Error (bad_request,
// body_too_long, user_not_found, not_group_member, member_not_active,
// group_dismissed, server_busy).
func (s *Service) Send(ctx context.Context, sender, originConn string, req SendRequest) (AckJSON, error) {
	began := time.Now()
	m, err := req.validate(sender, s.msg.MaxBodyBytes)
	if err != nil {
		return AckJSON{}, err
	}
	if err := s.authorize(ctx, &m); err != nil {
		return AckJSON{}, err
	}
	id, err := uuid.NewV7()
	if err != nil {
		return AckJSON{}, fmt.Errorf("server_msg_id: %w", err)
	}
	m.ServerMsgID, m.SendAt = id.String(), began.UnixMilli()

	mode := s.mode.Get()
	ack, err := s.send(ctx, mode, &m, originConn)
	if err != nil {
		return AckJSON{}, err
	}
	s.metrics.observe(ack.AckType, time.Since(began))
	return ack, nil
}

// SendSystem sends a server-made message — a group notification (msg_type
// 1500+) or a revoke notice — through the same pipeline as user messages,
// skipping validation and permission checks: the caller has decided. m needs
// ConversationID, SenderID (the member who caused it), SessionType,
// GroupID/RecvID, MsgType and Content; ClientMsgID, ServerMsgID and SendAt
// are generated when empty. The returned ACK carries the seq, which orders
// the event among the conversation's messages (a joiner's first visible seq
// is its join notification's; see docs/groups.md).
func (s *Service) SendSystem(ctx context.Context, m domain.Message) (AckJSON, error) {
	id, err := uuid.NewV7()
	if err != nil {
		return AckJSON{}, fmt.Errorf("server_msg_id: %w", err)
	}
	if m.ServerMsgID == "" {
		m.ServerMsgID = id.String()
	}
	if m.ClientMsgID == "" {
		m.ClientMsgID = "sys:" + m.ServerMsgID
	}
	if m.SendAt == 0 {
		m.SendAt = time.Now().UnixMilli()
	}
	m.Status = domain.StatusNormal
	return s.send(ctx, s.mode.Get(), &m, "")
}

func (s *Service) send(ctx context.Context, mode configs.TwoPhase, m *domain.Message, originConn string) (AckJSON, error) {
	s.retireAfterOutage(ctx, m.ConversationID)
	if !mode.Enabled {
		return s.sendSync(ctx, mode, m, originConn)
	}
	route := streams.SaveFirst
	if mode.DeliverBeforeSaved {
		route = streams.DeliverFirst
	}
	a, err := s.accept.Accept(ctx, streams.AcceptRequest{Msg: *m, Route: route, OriginConn: originConn, Append: true})
	switch {
	case err == nil:
		return ackOf(m, a, retryAckType(a)), nil
	case errors.Is(err, streams.ErrRedisUnavailable):
		return s.fallback(ctx, mode, m, originConn, err)
	}
	return AckJSON{}, err
}

// sendSync is the synchronous path with Redis up: Redis claims the
// client_msg_id and allocates the seq (the same allocator as two-phase, so
// seqs stay unique across a switch), then the request saves and answers
// ACK(saved), and the pushes go out asynchronously.
func (s *Service) sendSync(ctx context.Context, mode configs.TwoPhase, m *domain.Message, originConn string) (AckJSON, error) {
	a, err := s.accept.Accept(ctx, streams.AcceptRequest{Msg: *m, OriginConn: originConn})
	if errors.Is(err, streams.ErrRedisUnavailable) {
		return s.fallback(ctx, mode, m, originConn, err)
	}
	if err != nil {
		return AckJSON{}, err
	}
	if a.Duplicate {
		// The original is saved, or in flight in the pipeline (accepted
		// under two-phase before a switch): answer what it is.
		return ackOf(m, a, retryAckType(a)), nil
	}
	m.Seq = a.Seq
	stored, err := s.persist(ctx, m, originConn)
	if err != nil {
		return AckJSON{}, err
	}
	if err := s.accept.MarkSaved(ctx, &stored); err != nil {
		s.log.Warn("mark saved failed; a retry will be resolved by the database", "server_msg_id", stored.ServerMsgID, "err", err)
	}
	return ackOf(&stored, streams.Accepted{ServerMsgID: stored.ServerMsgID, Seq: stored.Seq, SendAt: stored.SendAt}, domain.AckSaved), nil
}

// fallback handles Redis being unreachable: with fail_open the seq comes
// from the database (a lease of one) and the message is saved in the
// request path, idempotent through the database's unique keys; without it
// the send is refused with server_busy and nothing is written.
func (s *Service) fallback(ctx context.Context, mode configs.TwoPhase, m *domain.Message, originConn string, cause error) (AckJSON, error) {
	if !mode.FailOpen {
		s.metrics.refused.Inc()
		return AckJSON{}, fmt.Errorf("%w: %w", domain.ErrServerBusy, cause)
	}
	s.metrics.fallbacks.Inc()
	lease, err := s.leaser.Lease(ctx, m.ConversationID, 1)
	if err != nil {
		return AckJSON{}, fmt.Errorf("fallback seq: %w", err)
	}
	m.Seq = lease.Ceiling
	s.noteFallback(m.ConversationID, m.Seq)
	stored, err := s.persist(ctx, m, originConn)
	if err != nil {
		return AckJSON{}, err
	}
	return ackOf(&stored, streams.Accepted{ServerMsgID: stored.ServerMsgID, Seq: stored.Seq, SendAt: stored.SendAt}, domain.AckSaved), nil
}

// persist saves one message in the request path and, when it is new,
// queues its pushes. It returns the stored message: the original one when
// the database already held this client_msg_id.
func (s *Service) persist(ctx context.Context, m *domain.Message, originConn string) (domain.Message, error) {
	for attempt := 0; ; attempt++ {
		res, err := s.saver.SaveBatch(ctx, []domain.Message{*m})
		if err != nil {
			return domain.Message{}, fmt.Errorf("save %s: %w", m.ServerMsgID, err)
		}
		switch res[0].Outcome {
		case store.Saved:
			s.fanout.Deliver(m, originConn)
			return *m, nil
		case store.Duplicate:
			return res[0].Original, nil
		}
		// SeqTaken: the seq was issued twice (Redis lost writes); take a
		// fresh one from the database.
		if attempt > 2 {
			return domain.Message{}, fmt.Errorf("save %s: seq %d taken repeatedly", m.ServerMsgID, m.Seq)
		}
		lease, err := s.leaser.Lease(ctx, m.ConversationID, 1)
		if err != nil {
			return domain.Message{}, err
		}
		m.Seq = lease.Ceiling
		s.noteFallback(m.ConversationID, m.Seq)
	}
}

func (s *Service) noteFallback(conversationID string, seq int64) {
	s.fallbackMu.Lock()
	s.fallbackSeqs[conversationID] = max(s.fallbackSeqs[conversationID], seq)
	s.fallbackMu.Unlock()
}

// retireAfterOutage moves the Redis allocator of a conversation above the
// seqs the fallback issued, so seqs keep rising in the order they are
// issued; it is a map lookup unless an outage left work.
func (s *Service) retireAfterOutage(ctx context.Context, conversationID string) {
	s.fallbackMu.Lock()
	seq, ok := s.fallbackSeqs[conversationID]
	s.fallbackMu.Unlock()
	if !ok {
		return
	}
	if err := s.accept.Retire(ctx, conversationID, seq); err != nil {
		return // Redis still away: the send falls back again
	}
	s.fallbackMu.Lock()
	if s.fallbackSeqs[conversationID] == seq {
		delete(s.fallbackSeqs, conversationID)
	}
	s.fallbackMu.Unlock()
}

// authorize checks the receiver exists (single chat) or that the sender may
// send to the group, before anything is allocated.
func (s *Service) authorize(ctx context.Context, m *domain.Message) error {
	if m.SessionType == domain.SessionGroup {
		if s.groups == nil {
			return domain.ErrGroupNotFound
		}
		return s.groups.CheckSend(ctx, m.GroupID, m.SenderID)
	}
	ok, err := s.users.exists(ctx, m.RecvID)
	if err != nil {
		return fmt.Errorf("look up receiver: %w", err)
	}
	if !ok {
		return fmt.Errorf("recv_id %s: %w", m.RecvID, domain.ErrUserNotFound)
	}
	return nil
}

// retryAckType is the ack_type of an accept: saved for a retry of a saved
// message, accepted otherwise.
func retryAckType(a streams.Accepted) domain.AckType {
	if a.Duplicate && a.Saved {
		return domain.AckSaved
	}
	return domain.AckAccepted
}

func ackOf(m *domain.Message, a streams.Accepted, t domain.AckType) AckJSON {
	return AckJSON{AckType: string(t), ServerMsgID: a.ServerMsgID, ClientMsgID: m.ClientMsgID,
		ConversationID: m.ConversationID, Seq: a.Seq, SendAt: a.SendAt}
}
