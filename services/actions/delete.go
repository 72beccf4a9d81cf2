package actions

import (
	"context"
	"fmt"
	"slices"

	"github.com/nexo-im/nexo/domain"
)

// Delete scopes.
const (
	ScopeSelf     = "self"
	ScopeEveryone = "everyone"
)

// DeleteRequest is the body of POST /msg/delete and the data of WS 1108.
type DeleteRequest struct {
	ConversationID string  `json:"conversation_id"`
	Seqs           []int64 `json:"seqs"`
	Scope          string  `json:"scope"`
}

// Validate implements api.Validator.
func (r *DeleteRequest) Validate() error {
	if r.ConversationID == "" {
		return domain.BadField("conversation_id", "required")
	}
	if len(r.Seqs) == 0 || len(r.Seqs) > MaxSeqsPerDelete {
		return domain.BadField("seqs", "1–%d seqs (got %d)", MaxSeqsPerDelete, len(r.Seqs))
	}
	for _, s := range r.Seqs {
		if s < 1 {
			return domain.BadField("seqs", "every seq must be >= 1 (got %d)", s)
		}
	}
	if r.Scope != ScopeSelf && r.Scope != ScopeEveryone {
		return domain.BadField("scope", "must be %q or %q", ScopeSelf, ScopeEveryone)
	}
	return nil
}

// DeleteResult answers a delete.
type DeleteResult struct {
	ConversationID string  `json:"conversation_id"`
	Seqs           []int64 `json:"seqs"`
	Scope          string  `json:"scope"`
}

// Delete removes messages of a conversation. Scope self hides them from
// userID only: every pull, search and the conversation list's last message
// leave them out for userID, and userID's own devices learn it from a 1604
// in userID's own conversation (no other member hears of it). Scope
// everyone turns them into tombstones for all — the sender's own messages,
// or any ordinary message for a group owner or admin, without a time
// window — and announces it (1603) to the conversation; seqs stay
// contiguous. All seqs or none. Errors: bad_request,
// not_conversation_member, not_group_member, member_not_active, bad_seq (a
// seq beyond the conversation's max_seq), message_not_found,
// delete_not_allowed, server_busy (a message not saved yet: retry).
func (s *Service) Delete(ctx context.Context, userID string, req DeleteRequest) (DeleteResult, error) {
	if err := req.Validate(); err != nil {
		return DeleteResult{}, err
	}
	conv := req.ConversationID
	seqs := slices.Clone(req.Seqs)
	slices.Sort(seqs)
	seqs = slices.Compact(seqs)
	var c caller
	var err error
	if req.Scope == ScopeSelf {
		// A member who left may still tidy up what it can see.
		c.bounds, err = s.d.Access.Member(ctx, userID, conv)
	} else {
		c, err = s.member(ctx, userID, conv)
	}
	if err != nil {
		return DeleteResult{}, err
	}
	for _, seq := range seqs {
		if err := s.checkSeq(ctx, conv, c, seq); err != nil {
			return DeleteResult{}, err
		}
	}
	if err := s.saved(ctx, conv, seqs); err != nil {
		return DeleteResult{}, err
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), announceTimeout)
	defer cancel()
	notice := DeleteNoticeJSON{ConversationID: conv, Seqs: seqs, Scope: req.Scope, DeleterID: userID, DeletedAt: s.now().UnixMilli()}
	if req.Scope == ScopeSelf {
		if err := s.d.Store.Hide(ctx, userID, conv, seqs); err != nil {
			return DeleteResult{}, err
		}
		if err := s.announce(ctx, userID, domain.SingleConversationID(userID, userID), MsgHideNotification, notice, ""); err != nil {
			return DeleteResult{}, err
		}
		return DeleteResult{ConversationID: conv, Seqs: seqs, Scope: req.Scope}, nil
	}
	_, err = s.d.Store.DeleteForAll(ctx, conv, seqs, func(m *domain.Message) error {
		switch {
		case m.Status == domain.StatusFailed:
			return fmt.Errorf("seq %d: %w", m.Seq, domain.ErrMessageNotFound)
		case m.MsgType >= domain.MsgNotificationMin:
			return domain.NewError(domain.ErrDeleteNotAllowed, fmt.Sprintf("seq %d is a notification", m.Seq))
		case m.SenderID != userID && !c.admin:
			return domain.NewError(domain.ErrDeleteNotAllowed, fmt.Sprintf("seq %d is not yours (only a group owner or admin may delete others' messages)", m.Seq))
		}
		return nil
	})
	if err != nil {
		return DeleteResult{}, err
	}
	if err := s.announce(ctx, userID, conv, MsgDeleteNotification, notice, ""); err != nil {
		return DeleteResult{}, err
	}
	return DeleteResult{ConversationID: conv, Seqs: seqs, Scope: req.Scope}, nil
}
