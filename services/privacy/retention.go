package privacy

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/nexo-im/nexo/domain"
	"github.com/nexo-im/nexo/services/sync"
)

// ConversationAccess answers who belongs to a conversation and its highest
// issued seq (sync.Access).
type ConversationAccess interface {
	Member(ctx context.Context, userID, conversationID string) (sync.Bounds, error)
	Highest(ctx context.Context, conversationID string, want int64) (int64, error)
}

// Roles returns an active group member's role (group.Members):
// domain.ErrNotGroupMember, ErrMemberNotActive or ErrGroupNotFound
// otherwise.
type Roles interface {
	CheckMember(ctx context.Context, groupID, userID string) (domain.RoleLevel, error)
}

// MaxRetention is the longest retention a conversation may set (ten
// years); MinRetention the shortest (one minute).
const (
	MaxRetention = 10 * 365 * 24 * time.Hour
	MinRetention = time.Minute
)

// ClearRequest is the body of POST /conversation/clear.
type ClearRequest struct {
	ConversationID string `json:"conversation_id"`
}

// Validate requires a well-formed conversation_id.
func (r *ClearRequest) Validate() error {
	return checkConversation(r.ConversationID)
}

func checkConversation(id string) error {
	if _, ok := domain.ConversationSessionType(id); !ok {
		return domain.BadField("conversation_id", "is not a conversation ID (si_<a>_<b> or sg_<group_id>)")
	}
	return nil
}

// ClearedJSON answers a clear: the seq the caller's history now starts
// after.
type ClearedJSON struct {
	ConversationID string `json:"conversation_id"`
	ClearedSeq     int64  `json:"cleared_seq"`
}

// Clear clears conversationID's history for userID alone: every seq issued
// until now (saved or still on its way) is no longer served to any of the
// user's devices — a pull shows those seqs as placeholders, the resend on
// connect skips them (delivered_seq moves up to seq; read_seq does not, so
// no read receipt is sent) — and the conversation leaves the user's list
// until its next message, as a delete does. The messages stay for the other party and members. Errors:
// bad_request, not_conversation_member.
func (s *Service) Clear(ctx context.Context, userID string, req ClearRequest) (ClearedJSON, error) {
	if err := req.Validate(); err != nil {
		return ClearedJSON{}, err
	}
	b, err := s.d.Access.Member(ctx, userID, req.ConversationID)
	if err != nil {
		return ClearedJSON{}, err
	}
	hi, err := s.d.Access.Highest(ctx, req.ConversationID, math.MaxInt64)
	if err != nil {
		return ClearedJSON{}, err
	}
	seq := b.Clamp(hi)
	if seq > 0 {
		if err := s.d.Store.Clear(ctx, userID, req.ConversationID, seq); err != nil {
			return ClearedJSON{}, err
		}
		if s.d.Cursors != nil {
			// Delivered, not read: a clear sends no read receipt.
			if _, err := s.d.Cursors.Advance(ctx, []domain.Cursor{{UserID: userID, ConversationID: req.ConversationID, DeliveredSeq: seq}}); err != nil {
				return ClearedJSON{}, err
			}
		}
	}
	return ClearedJSON{ConversationID: req.ConversationID, ClearedSeq: seq}, nil
}

// ClearedSeq is the seq userID cleared conversationID up to (0: none);
// pulls serve nothing at or below it (chat.Cleared).
func (s *Service) ClearedSeq(ctx context.Context, userID, conversationID string) (int64, error) {
	return s.d.Store.ClearedSeq(ctx, userID, conversationID)
}

// RetentionRequest is the body of POST /conversation/set_retention:
// retention_seconds is how long the conversation's messages are kept
// (60 s – 10 years), 0 to remove the conversation's own retention.
type RetentionRequest struct {
	ConversationID   string `json:"conversation_id"`
	RetentionSeconds int64  `json:"retention_seconds"`
}

// Validate checks the conversation and the range.
func (r *RetentionRequest) Validate() error {
	if err := checkConversation(r.ConversationID); err != nil {
		return err
	}
	if r.RetentionSeconds != 0 && (r.RetentionSeconds < int64(MinRetention/time.Second) || r.RetentionSeconds > int64(MaxRetention/time.Second)) {
		return domain.BadField("retention_seconds", "must be 0 (none) or %d–%d", int64(MinRetention/time.Second), int64(MaxRetention/time.Second))
	}
	return nil
}

// RetentionJSON is a conversation's retention: its own (0: none) and the
// one that applies, the shorter of its own and retention.max_age (0:
// messages are kept).
type RetentionJSON struct {
	ConversationID   string `json:"conversation_id"`
	RetentionSeconds int64  `json:"retention_seconds"`
	EffectiveSeconds int64  `json:"effective_seconds"`
}

// SetRetention sets a conversation's own retention: in a group, by its
// owner or an admin; in a single chat, by either party (both see the same
// history, as with disappearing messages). A conversation can only keep
// messages for less than retention.max_age, never longer. Errors:
// bad_request, forbidden (a plain member), not_group_member,
// member_not_active, group_not_found, not_conversation_member.
func (s *Service) SetRetention(ctx context.Context, userID string, req RetentionRequest) (RetentionJSON, error) {
	if err := req.Validate(); err != nil {
		return RetentionJSON{}, err
	}
	if err := s.mayManage(ctx, userID, req.ConversationID); err != nil {
		return RetentionJSON{}, err
	}
	ms := req.RetentionSeconds * 1000
	if err := s.d.Store.SetRetention(ctx, req.ConversationID, ms, userID); err != nil {
		return RetentionJSON{}, err
	}
	s.d.Log.Info("audit", "point", "retention_set", "conversation_id", req.ConversationID, "user_id", userID, "retention_seconds", req.RetentionSeconds)
	return s.retentionJSON(req.ConversationID, ms), nil
}

// Retention returns a conversation's retention to one of its members.
func (s *Service) Retention(ctx context.Context, userID, conversationID string) (RetentionJSON, error) {
	if err := checkConversation(conversationID); err != nil {
		return RetentionJSON{}, err
	}
	if _, err := s.d.Access.Member(ctx, userID, conversationID); err != nil {
		return RetentionJSON{}, err
	}
	ms, err := s.d.Store.Retention(ctx, conversationID)
	if err != nil {
		return RetentionJSON{}, err
	}
	return s.retentionJSON(conversationID, ms), nil
}

func (s *Service) retentionJSON(conversationID string, ownMs int64) RetentionJSON {
	return RetentionJSON{ConversationID: conversationID, RetentionSeconds: ownMs / 1000,
		EffectiveSeconds: effective(ownMs, s.d.Config.MaxAge).Milliseconds() / 1000}
}

// effective is the retention that applies: the shorter of a
// conversation's own (ms, 0: none) and the server's (0: none).
func effective(ownMs int64, server time.Duration) time.Duration {
	own := time.Duration(ownMs) * time.Millisecond
	switch {
	case own <= 0:
		return server
	case server <= 0:
		return own
	default:
		return min(own, server)
	}
}

// mayManage applies who may set a conversation's retention.
func (s *Service) mayManage(ctx context.Context, userID, conversationID string) error {
	t, _ := domain.ConversationSessionType(conversationID)
	if t == domain.SessionSingle {
		if _, ok := domain.SinglePeer(conversationID, userID); !ok {
			return domain.ErrNotConversationMember
		}
		return nil
	}
	if s.d.Roles == nil {
		return domain.ErrNotConversationMember
	}
	role, err := s.d.Roles.CheckMember(ctx, domain.GroupIDOf(conversationID), userID)
	if err != nil {
		return err
	}
	if role < domain.RoleAdmin {
		return domain.NewError(domain.ErrForbidden, "only the owner and admins may set a group's retention")
	}
	return nil
}

// SweepResult counts what one sweep deleted.
type SweepResult struct {
	Deleted int
}

// Sweep deletes the messages whose retention has passed at now, at most
// batch per statement, while hold reports the sweep may go on (the
// cleaner's lease is still held; nil: always). It returns how many it
// deleted. Each conversation with its own retention is swept by it; then,
// with retention.max_age, every conversation by that.
func (s *Service) Sweep(ctx context.Context, now time.Time, batch int, hold func(context.Context) bool) (SweepResult, error) {
	var res SweepResult
	own, err := s.d.Store.Retentions(ctx)
	if err != nil {
		return res, err
	}
	run := func(conv string, age time.Duration) error {
		before := now.Add(-age).UnixMilli()
		for {
			if hold != nil && !hold(ctx) {
				return errLeaseLost
			}
			n, err := s.d.Store.DeleteExpired(ctx, conv, nil, before, batch)
			res.Deleted += n
			if err != nil {
				return err
			}
			if n < batch {
				return nil
			}
		}
	}
	for conv, ms := range own {
		if err := run(conv, effective(ms, s.d.Config.MaxAge)); err != nil {
			return res, err
		}
	}
	if s.d.Config.MaxAge > 0 {
		if err := run("", s.d.Config.MaxAge); err != nil {
			return res, err
		}
	}
	return res, nil
}

// errLeaseLost stops a sweep whose instance no longer holds the cleaner's
// lease: another instance sweeps now.
var errLeaseLost = fmt.Errorf("retention cleaner: lease lost")
