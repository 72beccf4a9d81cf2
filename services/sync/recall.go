package sync

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/nexo-im/nexo/domain"
	"github.com/nexo-im/nexo/services/chat"
	"github.com/nexo-im/nexo/store"
)

// MsgRevokeNotification is the msg_type of the message that announces a
// recall to everyone in the conversation, in seq order with the chat.
const MsgRevokeNotification domain.MsgType = 1600

// RevokeNotificationJSON is the content.custom of a 1600 message: the
// message at (conversation_id, seq) was recalled by revoker_id.
type RevokeNotificationJSON struct {
	ConversationID string `json:"conversation_id"`
	Seq            int64  `json:"seq"`
	ServerMsgID    string `json:"server_msg_id"`
	SenderID       string `json:"sender_id"`
	RevokerID      string `json:"revoker_id"`
	RevokedAt      int64  `json:"revoked_at"`
}

// RevokeStore recalls stored messages and records recalls of messages not
// saved yet (store.RevokeRepo).
type RevokeStore interface {
	Message(ctx context.Context, conversationID string, seq int64) (domain.Message, error)
	Revoke(ctx context.Context, conversationID string, seq int64) (bool, error)
	Record(ctx context.Context, in store.RevokeIntent) error
}

// MemberRoles returns an active group member's role (group.Members):
// domain.ErrGroupNotFound, ErrNotGroupMember or ErrMemberNotActive
// otherwise.
type MemberRoles interface {
	CheckMember(ctx context.Context, groupID, userID string) (domain.RoleLevel, error)
}

// SystemSender sends a server-made message through the pipeline
// (chat.Service.SendSystem); a repeated (sender_id, client_msg_id) is
// answered with the original, so a retried recall announces once.
type SystemSender interface {
	SendSystem(ctx context.Context, m domain.Message) (chat.AckJSON, error)
}

// RecallDeps are the Recall's collaborators. Roles may be nil until group
// chat is wired (group recalls are then refused).
type RecallDeps struct {
	Window   time.Duration // msg.revoke_window
	Wait     time.Duration // sync.revoke_wait
	Access   *Access
	Store    RevokeStore
	Roles    MemberRoles
	Notifier SystemSender
	Push     AckPusher
	Saved    SavedMax
	// InFlight (streams.InFlightReader) tells a seq still on its way to the
	// database from a gap; nil when nothing is ever in flight.
	InFlight chat.InFlight
}

// Recall is WS 1102 and POST /msg/revoke: the sender may recall its
// message within msg.revoke_window, a group owner or admin any ordinary
// message of its group. The message stays with status revoked (pulls and
// resends show its metadata without content), the initiator gets a 2101
// {ack_type: "revoked"}, and everyone in the conversation gets a revoke
// notification (msg_type 1600), ordered with the chat by its seq.
//
// A recall of a seq that is accepted but not saved yet is recorded as an
// intent, which the save applies in its own transaction; the request
// waits up to sync.revoke_wait for the save to answer with the outcome.
type Recall struct {
	d   RecallDeps
	now func() time.Time
}

// NewRecall returns the recall service.
func NewRecall(d RecallDeps) *Recall { return &Recall{d: d, now: time.Now} }

// Revoke recalls (req.ConversationID, req.Seq) for userID and returns the
// 2101 data it pushed to the initiator. Errors: bad_request,
// not_conversation_member (and for groups not_group_member,
// member_not_active), message_not_found (no message at that seq the
// caller may see), revoke_not_allowed, revoke_timeout, server_busy (the
// message is not saved yet after sync.revoke_wait; the recall is recorded
// and applies when it is saved if allowed — retry to confirm it).
// Recalling a revoked message again answers the same (idempotent).
func (r *Recall) Revoke(ctx context.Context, userID string, req RevokeRequest) (chat.AckPushJSON, error) {
	if err := req.Validate(); err != nil {
		return chat.AckPushJSON{}, err
	}
	conv, seq := req.ConversationID, req.Seq
	b, err := r.d.Access.Member(ctx, userID, conv)
	if err != nil {
		return chat.AckPushJSON{}, err
	}
	if seq < b.Min || b.Cap > 0 && seq > b.Cap {
		return chat.AckPushJSON{}, fmt.Errorf("seq %d of %s: %w", seq, conv, domain.ErrMessageNotFound)
	}
	admin := false
	if groupID := domain.GroupIDOf(conv); groupID != "" {
		if r.d.Roles == nil {
			return chat.AckPushJSON{}, domain.ErrNotConversationMember
		}
		role, err := r.d.Roles.CheckMember(ctx, groupID, userID)
		if err != nil {
			return chat.AckPushJSON{}, err
		}
		admin = role >= domain.RoleAdmin
	}
	m, err := r.d.Store.Message(ctx, conv, seq)
	if errors.Is(err, domain.ErrMessageNotFound) {
		m, err = r.awaitSave(ctx, userID, conv, seq, admin)
	}
	if err != nil {
		return chat.AckPushJSON{}, err
	}
	if m.Status == domain.StatusFailed {
		return chat.AckPushJSON{}, fmt.Errorf("seq %d of %s failed to save: %w", seq, conv, domain.ErrMessageNotFound)
	}
	if err := r.allowed(userID, admin, &m); err != nil {
		return chat.AckPushJSON{}, err
	}
	// Once allowed, the recall runs to its end even if the client hangs up:
	// a revoked message is always announced.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), announceTimeout)
	defer cancel()
	if m.Status == domain.StatusNormal {
		if _, err := r.d.Store.Revoke(ctx, conv, seq); err != nil {
			return chat.AckPushJSON{}, err
		}
	}
	if err := r.announce(ctx, userID, &m); err != nil {
		return chat.AckPushJSON{}, err
	}
	ack := domain.Ack{Type: domain.AckRevoked, ServerMsgID: m.ServerMsgID, ClientMsgID: m.ClientMsgID,
		ConversationID: conv, Seq: seq, SendAt: m.SendAt, UserID: userID}
	r.d.Push.PushAck(ctx, userID, ack)
	return chat.AckPushJSON{AckType: string(ack.Type), ServerMsgID: ack.ServerMsgID, ClientMsgID: ack.ClientMsgID,
		ConversationID: conv, Seq: seq, SendAt: ack.SendAt, UserID: userID}, nil
}

// allowed applies the rules: no recall of notifications; an owner or
// admin recalls anything in its group; otherwise only the sender, within
// the window (a message already revoked by its sender stays answerable).
func (r *Recall) allowed(userID string, admin bool, m *domain.Message) error {
	switch {
	case m.MsgType >= domain.MsgNotificationMin:
		return domain.NewError(domain.ErrRevokeNotAllowed, "notifications cannot be revoked")
	case admin:
		return nil
	case m.SenderID != userID:
		return fmt.Errorf("only its sender (or a group owner or admin) may revoke it: %w", domain.ErrRevokeNotAllowed)
	case m.Status == domain.StatusRevoked:
		return nil
	case r.now().Sub(time.UnixMilli(m.SendAt)) > r.d.Window:
		return fmt.Errorf("sent more than %s ago: %w", r.d.Window, domain.ErrRevokeTimeout)
	}
	return nil
}

// announceTimeout bounds a recall's write and notification.
const announceTimeout = 10 * time.Second

// revokePoll is how often a recall looks for its message's save.
const revokePoll = 20 * time.Millisecond

// awaitSave handles a seq with no stored message: unknown above the
// highest issued seq; otherwise the recall is recorded for the save to
// apply, and the message is awaited up to sync.revoke_wait.
func (r *Recall) awaitSave(ctx context.Context, userID, conv string, seq int64, admin bool) (domain.Message, error) {
	hi, err := r.d.Access.Highest(ctx, conv, seq)
	if err != nil {
		return domain.Message{}, err
	}
	if seq > hi {
		return domain.Message{}, fmt.Errorf("seq %d of %s was never issued: %w", seq, conv, domain.ErrMessageNotFound)
	}
	err = r.d.Store.Record(ctx, store.RevokeIntent{ConversationID: conv, Seq: seq, RevokerID: userID, AnySender: admin,
		MinSendAt: r.now().Add(-r.d.Window).UnixMilli()})
	if err != nil {
		return domain.Message{}, err
	}
	deadline := time.NewTimer(r.d.Wait)
	defer deadline.Stop()
	tick := time.NewTicker(revokePoll)
	defer tick.Stop()
	for {
		m, err := r.d.Store.Message(ctx, conv, seq)
		if !errors.Is(err, domain.ErrMessageNotFound) {
			return m, err
		}
		select {
		case <-ctx.Done():
			return domain.Message{}, ctx.Err()
		case <-tick.C:
			continue
		case <-deadline.C:
		}
		// A seq at or below the saved max with no row is a gap — unless it
		// is still in flight (docs/sync.md, "not yet" and "never"): max_seq
		// first, then the marks, then the row.
		saved, err := r.d.Saved.MaxSeq(ctx, conv)
		if err == nil && seq <= saved && !r.inFlight(ctx, conv, seq) {
			if m, err := r.d.Store.Message(ctx, conv, seq); !errors.Is(err, domain.ErrMessageNotFound) {
				return m, err
			}
			return domain.Message{}, fmt.Errorf("seq %d of %s holds no message: %w", seq, conv, domain.ErrMessageNotFound)
		}
		return domain.Message{}, domain.NewError(domain.ErrServerBusy, "the message is not saved yet; the recall is recorded and applies when it is saved if you may revoke it; retry to confirm")
	}
}

// announce sends the revoke notification from userID into the message's
// conversation. Its client_msg_id is derived from the recalled message, so
// a retried recall by the same user announces once.
func (r *Recall) announce(ctx context.Context, userID string, m *domain.Message) error {
	body, err := json.Marshal(RevokeNotificationJSON{ConversationID: m.ConversationID, Seq: m.Seq,
		ServerMsgID: m.ServerMsgID, SenderID: m.SenderID, RevokerID: userID, RevokedAt: r.now().UnixMilli()})
	if err != nil {
		return err
	}
	n := domain.Message{ClientMsgID: domain.SystemClientMsgIDPrefix + "revoke:" + m.ServerMsgID, ConversationID: m.ConversationID, SenderID: userID,
		SessionType: m.SessionType, GroupID: m.GroupID, MsgType: MsgRevokeNotification, Content: domain.Content{Custom: string(body)}}
	if m.SessionType == domain.SessionSingle {
		n.RecvID, _ = domain.SinglePeer(m.ConversationID, userID)
	}
	if _, err := r.d.Notifier.SendSystem(ctx, n); err != nil {
		return fmt.Errorf("announce the recall of %s seq %d: %w", m.ConversationID, m.Seq, err)
	}
	return nil
}

// inFlight reports whether seq of conv may still be saved (true when Redis
// does not answer).
func (r *Recall) inFlight(ctx context.Context, conv string, seq int64) bool {
	if r.d.InFlight == nil {
		return false
	}
	seqs, err := r.d.InFlight.InFlight(ctx, conv)
	return err != nil || slices.Contains(seqs, seq)
}
