package chat

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
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
	// MarkSaved records m saved for retries of its client_msg_id and
	// settles allocated, the seq the accept step marked in flight for it.
	MarkSaved(ctx context.Context, m *domain.Message, allocated int64) error
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

// GroupGate is what a group send is checked against (group.Members).
type GroupGate interface {
	// CheckSend decides whether userID may send to the group right now:
	// domain.ErrGroupNotFound, ErrNotGroupMember, ErrMemberNotActive or
	// ErrGroupDismissed when not (see docs/groups.md).
	CheckSend(ctx context.Context, groupID, userID string) error
	// CheckMember returns the role of an active member of the group:
	// domain.ErrGroupNotFound, ErrNotGroupMember or ErrMemberNotActive
	// otherwise.
	CheckMember(ctx context.Context, groupID, userID string) (domain.RoleLevel, error)
}

// DMGate decides whether a user may write to another in a single chat
// (account.DMGate): a domain.ErrBlocked error when the receiver blocked
// the sender or their dm_policy refuses them. It runs on every
// single-chat send, so it must answer from a cache when it can.
type DMGate interface {
	CheckDM(ctx context.Context, sender, recv string) error
}

// SendHook is the app's before_send webhook: it may refuse a message
// (domain.ErrMessageRejected) or replace m.Content, which the service then
// checks again against msg.max_body_bytes and the msg_type's required
// field. It runs for user sends only, after the permission and mention
// checks and before a seq is issued.
type SendHook interface {
	BeforeSend(ctx context.Context, m *domain.Message) error
}

// AfterSave hears of messages saved on the synchronous path (the save
// stage tells it of the two-phase ones): the after_send events and offline
// push. fresh[i] is false for a message that was already saved before.
type AfterSave interface {
	AfterSave(ctx context.Context, msgs []domain.Message, fresh []bool) error
}

// SenderGate says how long a sender's sends are still refused because its
// messages keep being dead-lettered (store.DeadSenders; 0: not blocked).
// It must not do I/O: it runs on every send.
type SenderGate interface {
	Blocked(sender string) time.Duration
}

// WordFilter is the operator's word filter (moderation.Filter): s
// unchanged when it holds no blocked word, s masked under
// moderation.action mask, or a domain.ErrBlockedWord error naming field
// under refuse. It must not do I/O: it runs on every text send.
type WordFilter interface {
	Check(field, s string) (string, error)
}

// Fanout delivers a saved message off the request path (the synchronous
// path's pushes).
type Fanout interface {
	Deliver(m *domain.Message, exceptConn string)
}

// Origin is who sends: the token's user (never a frame field) and, for a
// WebSocket send, the sending connection (its own pushes skip it); the
// platform is the token's, for the ACK audit line.
type Origin struct {
	UserID     string
	ConnID     string // "" for HTTP
	PlatformID int    // 0 when unknown (the server API sends for a user)
	// App marks a send by the app's backend (the server API's
	// /api/msg/send): the word filter does not apply, as the app decides
	// what it sends (docs/moderation.md). Every rule of the person it
	// sends as still holds.
	App bool
}

// Service sends messages.
type Service struct {
	mode      *Mode
	audit     *domain.Audit
	msg       configs.Msg
	accept    Accepter
	saver     Saver
	leaser    Leaser
	users     *KnownUsers
	groups    GroupGate
	fanout    Fanout
	originals *originalLookup // nil: no check
	records   IdemRecords     // nil: every send asks originals
	log       *slog.Logger
	metrics   *sendMetrics
	hook      SendHook
	after     AfterSave
	offenders SenderGate
	dm        DMGate
	words     WordFilter
	quotes    Quotes
	objects   Objects

	// fallbackSeqs: conversations that got seqs straight from the database
	// while Redis was unreachable, with the highest such seq; the Redis
	// allocator is retired above it before it issues again.
	fallbackMu   sync.Mutex
	fallbackSeqs map[string]int64
	// fallbackAt: the last send this process saved without Redis (Unix
	// ms), so without an idempotency record.
	fallbackAt atomic.Int64
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
	// Originals, when set, is asked before a send gets a new seq whether
	// its client_msg_id is already saved (a retry after the Redis
	// idempotency record expired or was lost); nil skips the check.
	Originals Originals
	// Records, when set, lets a send whose client_msg_id is a recent
	// UUIDv7 skip that question: Redis still holds the record of any
	// earlier send of it (see recentClientMsgID). nil asks for every send.
	Records  IdemRecords
	Log      *slog.Logger
	Audit    *domain.Audit         // nil: no audit lines
	Registry prometheus.Registerer // nil: metrics unregistered
	Hook     SendHook              // nil: no before_send
	After    AfterSave             // nil: nothing after a synchronous save
	// DeadSenders, when set, refuses the sends of a user blocked for
	// repeated dead letters (limits.dead_letters).
	DeadSenders SenderGate
	// DM, when set, refuses single-chat sends the receiver does not
	// accept (blocks, dm_policy), on every path: HTTP, WebSocket and the
	// server API, synchronous and two-phase.
	DM DMGate
	// Words, when set, filters the text of user sends (101 and 106
	// content.text, 110 content.custom's top-level search_text) on HTTP and
	// WebSocket; the server API's sends (Origin.App) are exempt.
	Words WordFilter
	// Quotes, when set, lets a send quote a message (quote: {seq}); nil
	// refuses quotes with quote_unavailable.
	Quotes Quotes
	// Objects, when set, checks the objects that 102–105 messages carry
	// by reference ({"object_id": …}); nil refuses such references.
	Objects Objects
}

// NewService returns the message service.
func NewService(d Deps) *Service {
	return &Service{
		mode: d.Mode, msg: d.Msg, accept: d.Accepter, saver: d.Saver, leaser: d.Leaser,
		users: NewKnownUsers(d.Users), groups: d.Groups, fanout: d.Fanout, originals: newOriginalLookup(d.Originals), records: d.Records, log: d.Log, audit: d.Audit,
		metrics: newSendMetrics(d.Registry), fallbackSeqs: map[string]int64{}, hook: d.Hook, after: d.After,
		offenders: d.DeadSenders, dm: d.DM, words: d.Words, quotes: d.Quotes, objects: d.Objects,
	}
}

// Send validates req from sender (the token's user, never a frame field),
// checks permission and mentions, asks before_send, and then — two-phase —
// runs the accept step and answers ACK(accepted), or — two-phase off, or
// Redis unreachable with fail_open — persists in the request path and
// answers ACK(saved). A retry of the same client_msg_id answers the
// original's ACK (ack_type saved once it is saved). from.ConnID is the sending connection ("" for HTTP); its
// pushes skip it. Errors are domain errors (bad_request, body_too_long,
// user_not_found, not_group_member, member_not_active, group_dismissed,
// forbidden for @all by a plain member, blocked when the receiver does not
// accept the sender's messages, message_rejected, server_busy,
// too_many_requests for a sender blocked for repeated dead letters).
func (s *Service) Send(ctx context.Context, from Origin, req SendRequest) (AckJSON, error) {
	sender, originConn := from.UserID, from.ConnID
	began := time.Now()
	m, err := req.validate(sender, s.msg.MaxBodyBytes)
	if err != nil {
		return AckJSON{}, err
	}
	if err := s.checkOffender(sender); err != nil {
		return AckJSON{}, err
	}
	if err := s.authorize(ctx, &m); err != nil {
		return AckJSON{}, err
	}
	// A retry of a saved message is answered before the mention check and
	// the before_send hook: the message was already approved and sent.
	if ack, ok := s.savedOriginal(ctx, &m); ok {
		s.metrics.observe(ack.AckType, time.Since(began))
		return ack, nil
	}
	if err := s.checkMentions(ctx, &m); err != nil {
		return AckJSON{}, err
	}
	// The word filter runs before before_send: a refused message costs the
	// app no call, and the app sees (and may still refuse or rewrite) the
	// masked text. What before_send puts back is not filtered again.
	if s.words != nil && !from.App {
		if err := filterWords(s.words, &m); err != nil {
			return AckJSON{}, err
		}
	}
	if err := s.takeQuote(ctx, &m, req.Quote); err != nil {
		return AckJSON{}, err
	}
	if s.hook != nil {
		if err := s.hook.BeforeSend(ctx, &m); err != nil {
			return AckJSON{}, err
		}
		if err := checkContent(&m, s.msg.MaxBodyBytes); err != nil {
			return AckJSON{}, err
		}
	}
	// After before_send, so a reference the hook wrote is checked too.
	if err := s.attachObjects(ctx, &m); err != nil {
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
		s.audit.Fail(ctx, "ack", err, append(domain.AuditMsg(&m), domain.AuditConn(sender, from.PlatformID, originConn)...)...)
		return AckJSON{}, err
	}
	if s.audit.On(ctx) {
		s.audit.OK(ctx, "ack", append(domain.AuditConn(sender, from.PlatformID, originConn),
			slog.String("server_msg_id", ack.ServerMsgID), slog.String("conversation_id", ack.ConversationID),
			slog.Int64("seq", ack.Seq), slog.String("ack_type", ack.AckType))...)
	}
	s.metrics.observe(ack.AckType, time.Since(began))
	return ack, nil
}

// takeQuote attaches the snapshot of the quoted message, taken now (the
// reply's accept): a later edit, recall or delete of the quoted message
// never changes what the reply stored.
func (s *Service) takeQuote(ctx context.Context, m *domain.Message, q *QuoteRequest) error {
	if q == nil {
		return nil
	}
	if s.quotes == nil {
		return domain.NewError(domain.ErrQuoteUnavailable, "quotes are not served")
	}
	snap, err := s.quotes.Quote(ctx, m.SenderID, m.ConversationID, q.Seq)
	if err != nil {
		return err
	}
	m.Quote = &snap
	return nil
}

// checkOffender refuses a sender blocked for repeated dead letters, before
// a seq is issued: too_many_requests with the rest of the block as
// retry-after.
func (s *Service) checkOffender(sender string) error {
	if s.offenders == nil {
		return nil
	}
	wait := s.offenders.Blocked(sender)
	if wait <= 0 {
		return nil
	}
	e := domain.NewError(domain.ErrRateLimited, "your recent messages could not be stored (dead-lettered); sending is paused")
	e.RetryAfter = wait
	return e
}

// savedOriginal answers a retry whose original is already in the database
// with the original's ACK(saved) — same server_msg_id, seq and send_at —
// before any seq is issued. Redis remembers (sender, client_msg_id) for
// two_phase.idempotency_ttl only, and not at all after it lost its data
// (the embedded mode's every restart), so without this check such a retry
// would get a new seq and only its later ACK(saved) would name the
// original. It costs one point query on uk_sender_client_msg per send,
// shared with the concurrent sends' (originalLookup), except for a send
// whose client_msg_id is a UUIDv7 recent enough that its record, if it was
// sent before, is still in Redis (recentClientMsgID); a database error
// skips it (the save stage still refuses the duplicate), and so does, on
// the two-phase path, an answer slower than two_phase.duplicate_check_wait
// — the ACK(accepted) does not wait on a busy database (a retention sweep,
// a slow disk) for a check that almost every send passes.
func (s *Service) savedOriginal(ctx context.Context, m *domain.Message) (AckJSON, bool) {
	if s.originals == nil {
		return AckJSON{}, false
	}
	if s.records != nil {
		if since, ttl := s.recordsKept(); recentClientMsgID(m.ClientMsgID, time.Now(), since, ttl) {
			s.metrics.lookupsSkipped.Inc()
			return AckJSON{}, false
		}
	}
	var wait time.Duration
	if mode := s.mode.Get(); mode.Enabled {
		wait = mode.DuplicateCheckWait
	}
	orig, err := s.originals.find(ctx, domain.ClientMsgKey{SenderID: m.SenderID, ClientMsgID: m.ClientMsgID}, wait)
	switch {
	case errors.Is(err, domain.ErrMessageNotFound):
		return AckJSON{}, false
	case errors.Is(err, errLookupTooSlow):
		s.metrics.lookupsOverWait.Inc()
		return AckJSON{}, false
	case err != nil:
		s.log.Warn("idempotency check in the database failed; sending (the save stage refuses a duplicate)",
			"sender_id", m.SenderID, "client_msg_id", m.ClientMsgID, "err", err)
		return AckJSON{}, false
	case orig.ConversationID != m.ConversationID:
		// The same client_msg_id for another conversation is a client bug;
		// the database keeps the first, so answer what it holds.
	}
	s.metrics.dbDuplicates.Inc()
	return ackOf(&orig, streams.Accepted{ServerMsgID: orig.ServerMsgID, Seq: orig.Seq, SendAt: orig.SendAt}, domain.AckSaved), true
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
		m.ClientMsgID = domain.SystemClientMsgIDPrefix + m.ServerMsgID
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
	// The seq counts as in flight for streams.SyncSaveWindow: the save
	// must commit well within it, or a pull could call a seq "never" that
	// is then saved.
	saveCtx, cancel := context.WithTimeout(ctx, streams.SyncSaveWindow/2)
	stored, err := s.persist(saveCtx, m, originConn)
	cancel()
	if err != nil {
		return AckJSON{}, err
	}
	if err := s.accept.MarkSaved(ctx, &stored, a.Seq); err != nil {
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
	// The fallback writes no idempotency record: a retry of this send must
	// ask the database.
	s.fallbackAt.Store(time.Now().UnixMilli())
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
// the database already held this client_msg_id. A seq the database finds
// taken is replaced by store.Resequence (the save stage's policy too); an
// allocator it could not retire is retired before the conversation's next
// send (retireAfterOutage).
func (s *Service) persist(ctx context.Context, m *domain.Message, originConn string) (domain.Message, error) {
	res, err := s.saver.SaveBatch(ctx, []domain.Message{*m})
	if err != nil {
		return domain.Message{}, fmt.Errorf("save %s: %w", m.ServerMsgID, err)
	}
	r := res[0]
	if r.Outcome == store.SeqTaken {
		var notRetired error
		if r, notRetired, err = store.Resequence(ctx, s.saver, s.leaser, s.accept, m); err != nil {
			return domain.Message{}, err
		}
		if notRetired != nil {
			s.noteFallback(m.ConversationID, m.Seq)
		}
	}
	if r.Outcome == store.Duplicate {
		s.metrics.dbDuplicates.Inc()
		return r.Original, nil
	}
	s.fanout.Deliver(m, originConn)
	s.afterSave(ctx, r.Original, true)
	return *m, nil
}

// afterSave tells the AfterSave hook; on the synchronous path a failure
// is logged (the message is saved and answered; the events are lost).
func (s *Service) afterSave(ctx context.Context, m domain.Message, fresh bool) {
	if s.after == nil {
		return
	}
	if err := s.after.AfterSave(ctx, []domain.Message{m}, []bool{fresh}); err != nil {
		s.log.Warn("after-save events lost", "server_msg_id", m.ServerMsgID, "err", err)
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

// authorize checks the receiver exists and accepts the sender (single
// chat: blocked otherwise) or that the sender may send to the group,
// before anything is allocated.
func (s *Service) authorize(ctx context.Context, m *domain.Message) error {
	if m.SessionType == domain.SessionGroup {
		if s.groups == nil {
			return domain.ErrGroupNotFound
		}
		return s.groups.CheckSend(ctx, m.GroupID, m.SenderID)
	}
	ok, err := s.users.Exists(ctx, m.RecvID)
	if err != nil {
		return fmt.Errorf("look up receiver: %w", err)
	}
	if !ok {
		return fmt.Errorf("recv_id %s: %w", m.RecvID, domain.ErrUserNotFound)
	}
	if s.dm != nil {
		return s.dm.CheckDM(ctx, m.SenderID, m.RecvID)
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
