// Package actions is what members do to a message after it is sent:
// edit it, react to it, delete it for themselves or for everyone, and see
// who of a group read it (docs/actions.md). Every change is announced by a
// notification message (msg_type 1601–1604) sent through the pipeline like
// a recall notice (1600), so it is ordered with the conversation's
// messages by its seq, reaches every member's devices and the actor's
// other devices, and an offline device learns of it at its next sync.
// Quoted replies are taken by the send path (chat.Puller.Quote); pulls
// show all of it through the Annotator.
package actions

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/nexo-im/nexo/configs"
	"github.com/nexo-im/nexo/domain"
	"github.com/nexo-im/nexo/services/chat"
	"github.com/nexo-im/nexo/services/sync"
	"github.com/nexo-im/nexo/store"
)

// Notification msg types, each with a JSON content.custom (docs/actions.md).
const (
	// MsgEditNotification: EditNoticeJSON, to the conversation.
	MsgEditNotification domain.MsgType = 1601
	// MsgReactionNotification: ReactionNoticeJSON, to the conversation.
	MsgReactionNotification domain.MsgType = 1602
	// MsgDeleteNotification: DeleteNoticeJSON (scope everyone), to the
	// conversation.
	MsgDeleteNotification domain.MsgType = 1603
	// MsgHideNotification: DeleteNoticeJSON (scope self), sent into the
	// actor's own conversation (si_<user>_<user>) so only its devices see it.
	MsgHideNotification domain.MsgType = 1604
)

// EditNoticeJSON is the content.custom of a 1601: the message at
// (conversation_id, seq) now reads content, as of edit_version.
type EditNoticeJSON struct {
	ConversationID string           `json:"conversation_id"`
	Seq            int64            `json:"seq"`
	ServerMsgID    string           `json:"server_msg_id"`
	EditorID       string           `json:"editor_id"`
	EditVersion    int              `json:"edit_version"`
	EditedAt       int64            `json:"edited_at"`
	Content        chat.ContentJSON `json:"content"`
}

// ReactionNoticeJSON is the content.custom of a 1602: user_id added or
// removed emoji on (conversation_id, seq), which now has count of it.
type ReactionNoticeJSON struct {
	ConversationID string `json:"conversation_id"`
	Seq            int64  `json:"seq"`
	UserID         string `json:"user_id"`
	Emoji          string `json:"emoji"`
	Op             string `json:"op"`
	Count          int    `json:"count"`
}

// DeleteNoticeJSON is the content.custom of a 1603 (scope everyone) and a
// 1604 (scope self).
type DeleteNoticeJSON struct {
	ConversationID string  `json:"conversation_id"`
	Seqs           []int64 `json:"seqs"`
	Scope          string  `json:"scope"`
	DeleterID      string  `json:"deleter_id"`
	DeletedAt      int64   `json:"deleted_at"`
}

// Store is the actions' storage (store.ActionRepo).
type Store interface {
	Edit(ctx context.Context, conv string, seq int64, editorID, text string, at int64, check func(*domain.Message) error) (domain.Message, error)
	Edits(ctx context.Context, conv string, seq int64) ([]store.EditVersion, error)
	DeleteForAll(ctx context.Context, conv string, seqs []int64, check func(*domain.Message) error) ([]domain.Message, error)
	Hide(ctx context.Context, userID, conv string, seqs []int64) error
	Hidden(ctx context.Context, userID, conv string, seqs []int64) (map[int64]bool, error)
	React(ctx context.Context, conv string, seq int64, userID, emoji string, add bool, maxPerUser int, check func(*domain.Message) error) (store.ReactionOutcome, error)
	Reactions(ctx context.Context, conv string, seqs []int64, viewer string) (map[int64][]store.ReactionCount, error)
	ReadersFrom(ctx context.Context, conv string, seq int64) ([]store.ReadCursor, error)
	SentIn(ctx context.Context, conv string, after, upto int64, limit int) ([]domain.Message, error)
}

// Messages reads stored messages (store.MessageRepo, store.RevokeRepo).
type Messages interface {
	BySeqs(ctx context.Context, conversationID string, seqs []int64) ([]domain.Message, error)
}

// GroupViewers lists the members of a group who could see a seq
// (group.Members.SawSeq), sorted.
type GroupViewers interface {
	SawSeq(ctx context.Context, groupID string, seq int64) ([]string, error)
}

// Deps are the Service's collaborators.
type Deps struct {
	Msg      configs.Msg   // edit_window, max_reactions_per_user, reaction_emojis
	Wait     time.Duration // sync.revoke_wait: how long an action waits for its message's save
	Access   *sync.Access
	Store    Store
	Messages Messages
	Roles    sync.MemberRoles
	Viewers  GroupViewers
	Notifier sync.SystemSender
}

// Service serves the message actions.
type Service struct {
	d      Deps
	emojis *emojiSet
	now    func() time.Time
}

// NewService returns the actions service.
func NewService(d Deps) *Service {
	return &Service{d: d, emojis: newEmojiSet(d.Msg.ReactionEmojis), now: time.Now}
}

// MaxSeqsPerDelete caps the seqs of one delete request.
const MaxSeqsPerDelete = 100

// announceTimeout bounds an action's notification once its change is
// stored: the change is announced even if the client hangs up.
const announceTimeout = 10 * time.Second

// pollEvery is how often an action looks for its message's save.
const pollEvery = 20 * time.Millisecond

// caller is what an action learns of its caller in a conversation.
type caller struct {
	bounds sync.Bounds
	admin  bool // a group owner or admin
}

// member checks userID may act in conv: a party of a single chat, an
// active member of a group (a member who left may still pull what it saw,
// not change it). Errors: bad_request, not_conversation_member,
// not_group_member, member_not_active.
func (s *Service) member(ctx context.Context, userID, conv string) (caller, error) {
	b, err := s.d.Access.Member(ctx, userID, conv)
	if err != nil {
		return caller{}, err
	}
	c := caller{bounds: b}
	if groupID := domain.GroupIDOf(conv); groupID != "" {
		if s.d.Roles == nil {
			return caller{}, domain.ErrNotConversationMember
		}
		role, err := s.d.Roles.CheckMember(ctx, groupID, userID)
		if err != nil {
			return caller{}, err
		}
		c.admin = role >= domain.RoleAdmin
	}
	return c, nil
}

// checkSeq refuses a seq above the highest the conversation ever issued
// (bad_seq) and one outside the caller's visibility (message_not_found,
// not revealing what is there).
func (s *Service) checkSeq(ctx context.Context, conv string, c caller, seq int64) error {
	if seq < 1 {
		return domain.BadField("seq", "must be >= 1")
	}
	hi, err := s.d.Access.Highest(ctx, conv, seq)
	if err != nil {
		return err
	}
	if seq > hi {
		return domain.NewError(domain.ErrBadSeq, fmt.Sprintf("seq %d is beyond the conversation's max_seq %d", seq, hi))
	}
	if seq < c.bounds.Min || c.bounds.Cap > 0 && seq > c.bounds.Cap {
		return fmt.Errorf("seq %d of %s: %w", seq, conv, domain.ErrMessageNotFound)
	}
	return nil
}

// saved waits up to Deps.Wait for the messages at seqs to be saved (an
// action on a message accepted a moment ago). Errors: server_busy when one
// is still not saved; message_not_found for a failed save.
func (s *Service) saved(ctx context.Context, conv string, seqs []int64) error {
	deadline := time.Now().Add(s.d.Wait)
	for {
		got, err := s.d.Messages.BySeqs(ctx, conv, seqs)
		if err != nil {
			return err
		}
		for _, m := range got {
			if m.Status == domain.StatusFailed {
				return fmt.Errorf("seq %d of %s failed to save: %w", m.Seq, conv, domain.ErrMessageNotFound)
			}
		}
		if len(got) == len(seqs) {
			return nil
		}
		if time.Now().After(deadline) {
			return domain.NewError(domain.ErrServerBusy, "the message is not saved yet; retry")
		}
		t := time.NewTimer(pollEvery)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
	}
}

// announce sends a notification of msgType with body into conv, from
// actor. clientMsgID, when set, makes a retried announcement of the same
// change count once.
func (s *Service) announce(ctx context.Context, actor, conv string, msgType domain.MsgType, body any, clientMsgID string) error {
	b, err := json.Marshal(body)
	if err != nil {
		return err
	}
	n := domain.Message{ClientMsgID: clientMsgID, ConversationID: conv, SenderID: actor, MsgType: msgType,
		Content: domain.Content{Custom: string(b)}}
	if groupID := domain.GroupIDOf(conv); groupID != "" {
		n.SessionType, n.GroupID = domain.SessionGroup, groupID
	} else {
		n.SessionType = domain.SessionSingle
		n.RecvID, _ = domain.SinglePeer(conv, actor)
	}
	if _, err := s.d.Notifier.SendSystem(ctx, n); err != nil {
		return fmt.Errorf("announce %d in %s: %w", msgType, conv, err)
	}
	return nil
}

// gone refuses a change to a recalled or deleted message.
func gone(m *domain.Message) error {
	switch m.Status {
	case domain.StatusRevoked, domain.StatusDeleted:
		return domain.NewError(domain.ErrMessageGone, fmt.Sprintf("seq %d was %s", m.Seq, m.Status))
	case domain.StatusFailed:
		return fmt.Errorf("seq %d: %w", m.Seq, domain.ErrMessageNotFound)
	}
	return nil
}

// isGone reports whether err says the message was recalled or deleted.
func isGone(err error) bool { return errors.Is(err, domain.ErrMessageGone) }
