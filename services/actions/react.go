package actions

import (
	"context"
	"fmt"

	"github.com/nexo-im/nexo/domain"
)

// Reaction ops.
const (
	OpAdd    = "add"
	OpRemove = "remove"
)

// ReactionRequest is the body of POST /msg/reaction and the data of WS 1109.
type ReactionRequest struct {
	ConversationID string `json:"conversation_id"`
	Seq            int64  `json:"seq"`
	Emoji          string `json:"emoji"`
	Op             string `json:"op"`
}

// Validate implements api.Validator (the emoji is checked by the service,
// against its allow list).
func (r *ReactionRequest) Validate() error {
	if r.ConversationID == "" {
		return domain.BadField("conversation_id", "required")
	}
	if r.Seq < 1 {
		return domain.BadField("seq", "required, >= 1")
	}
	if r.Op != OpAdd && r.Op != OpRemove {
		return domain.BadField("op", "must be %q or %q", OpAdd, OpRemove)
	}
	return nil
}

// ReactionResult answers a reaction: whether it changed anything (adding a
// reaction already there, or removing one that is not, changes nothing and
// announces nothing) and how many users now react with the emoji.
type ReactionResult struct {
	ConversationID string `json:"conversation_id"`
	Seq            int64  `json:"seq"`
	Emoji          string `json:"emoji"`
	Op             string `json:"op"`
	Count          int    `json:"count"`
	Changed        bool   `json:"changed"`
}

// React adds or removes userID's reaction emoji on the message at
// (conversation_id, seq) and, when that changed something, announces it
// (1602) to the conversation. emoji is one grapheme cluster from
// msg.reaction_emojis (empty: any single emoji); a user has at most
// msg.max_reactions_per_user emojis on one message. Errors: bad_request,
// bad_emoji, not_conversation_member, not_group_member, member_not_active,
// bad_seq, message_not_found, message_gone, too_many_reactions,
// server_busy.
func (s *Service) React(ctx context.Context, userID string, req ReactionRequest) (ReactionResult, error) {
	if err := req.Validate(); err != nil {
		return ReactionResult{}, err
	}
	if err := s.emojis.check(req.Emoji); err != nil {
		return ReactionResult{}, err
	}
	conv, seq := req.ConversationID, req.Seq
	c, err := s.member(ctx, userID, conv)
	if err != nil {
		return ReactionResult{}, err
	}
	if err := s.checkSeq(ctx, conv, c, seq); err != nil {
		return ReactionResult{}, err
	}
	if err := s.saved(ctx, conv, []int64{seq}); err != nil {
		return ReactionResult{}, err
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), announceTimeout)
	defer cancel()
	out, err := s.d.Store.React(ctx, conv, seq, userID, req.Emoji, req.Op == OpAdd, s.d.Msg.MaxReactionsPerUser, func(m *domain.Message) error {
		if err := gone(m); err != nil {
			return err
		}
		if m.MsgType >= domain.MsgNotificationMin {
			return domain.BadField("seq", "seq %d is a notification; notifications take no reactions", m.Seq)
		}
		return nil
	})
	if err != nil {
		return ReactionResult{}, err
	}
	res := ReactionResult{ConversationID: conv, Seq: seq, Emoji: req.Emoji, Op: req.Op, Count: out.Count, Changed: out.Changed}
	if out.Changed {
		notice := ReactionNoticeJSON{ConversationID: conv, Seq: seq, UserID: userID, Emoji: req.Emoji, Op: req.Op, Count: out.Count}
		if err := s.announce(ctx, userID, conv, MsgReactionNotification, notice, ""); err != nil {
			return ReactionResult{}, fmt.Errorf("reaction stored, announcement failed: %w", err)
		}
	}
	return res, nil
}
