package sync

import (
	"context"
	"fmt"
	"math"

	"github.com/nexo-im/nexo/domain"
	"github.com/nexo-im/nexo/services/chat"
	"github.com/nexo-im/nexo/store"
)

// ConversationStore is the conversation storage the list and settings
// need (store.ConversationRepo).
type ConversationStore interface {
	List(ctx context.Context, ownerID string, offset, limit int) ([]store.ConversationState, int64, error)
	States(ctx context.Context, ownerID string, conversationIDs []string) ([]store.ConversationState, error)
	UnreadCounts(ctx context.Context, userID string, ranges []store.SeqRange) (map[string]int64, error)
	MentionCounts(ctx context.Context, userID string, ranges []store.SeqRange) (map[string]int64, error)
	LatestFor(ctx context.Context, viewer string, ranges []store.SeqRange) (map[string]domain.Message, error)
	UpdateSettings(ctx context.Context, s store.ConversationSettings) error
	Hide(ctx context.Context, ownerID, conversationID string, seq int64) error
}

// MemberSettings applies a member's new recv_msg_opt to the group member
// cache (group.Members) that the group fanout reads it from, in place: the
// group's member list is not reloaded.
type MemberSettings interface {
	SetRecvMsgOpt(ctx context.Context, groupID, userID string, opt int) error
}

// List paging: limit 0 means DefaultListLimit; more than MaxListLimit is
// clamped.
const (
	DefaultListLimit = 20
	MaxListLimit     = 100
)

// Conversations serves the conversation list and each user's settings of
// a conversation. A page costs five queries whatever its size (count,
// page, unread counts, mention counts, latest messages), never one per
// conversation.
type Conversations struct {
	access *Access
	store  ConversationStore
	writer *CursorWriter
	groups MemberSettings
	noPush *NoPushCache
}

// NewConversations returns the conversation service; groups may be nil
// until group chat is wired, noPush nil when no deliver stage reads it.
func NewConversations(access *Access, st ConversationStore, writer *CursorWriter, groups MemberSettings, noPush *NoPushCache) *Conversations {
	return &Conversations{access: access, store: st, writer: writer, groups: groups, noPush: noPush}
}

// List returns a page of userID's conversations — pinned first, then by
// newest message — and how many it has in all; a deleted conversation is
// left out until a message arrives above the seq it was deleted at.
// unread_count counts the readable messages above max(read_seq, that seq)
// not sent by the caller (notifications and revoked messages left out);
// the mention counts those of them that mention the caller or "all".
func (s *Conversations) List(ctx context.Context, userID string, offset, limit int) (ListResult, error) {
	switch {
	case offset < 0:
		return ListResult{}, domain.BadField("offset", "must be >= 0")
	case limit < 0:
		return ListResult{}, domain.BadField("limit", "must be >= 0")
	case limit == 0:
		limit = DefaultListLimit
	}
	limit = min(limit, MaxListLimit)
	states, total, err := s.store.List(ctx, userID, offset, limit)
	if err != nil {
		return ListResult{}, err
	}
	convs, err := s.render(ctx, userID, states)
	if err != nil {
		return ListResult{}, err
	}
	return ListResult{Conversations: convs, Total: total}, nil
}

// render builds the list entries of states with three batched queries.
func (s *Conversations) render(ctx context.Context, userID string, states []store.ConversationState) ([]ConversationJSON, error) {
	unreadRanges := make([]store.SeqRange, len(states))
	visibleRanges := make([]store.SeqRange, len(states))
	cursors := make([]domain.Cursor, len(states))
	for i := range states {
		st := &states[i]
		c := st.Cursor
		s.writer.Overlay(&c)
		cursors[i] = c
		top := st.VisibleMax()
		unreadRanges[i] = store.SeqRange{ConversationID: st.ConversationID, After: max(c.ReadSeq, st.HiddenSeq, st.VisibleMin()-1), Upto: top}
		visibleRanges[i] = store.SeqRange{ConversationID: st.ConversationID, After: st.VisibleMin() - 1, Upto: top}
	}
	unread, err := s.store.UnreadCounts(ctx, userID, unreadRanges)
	if err != nil {
		return nil, err
	}
	mentions, err := s.store.MentionCounts(ctx, userID, unreadRanges)
	if err != nil {
		return nil, err
	}
	latest, err := s.store.LatestFor(ctx, userID, visibleRanges)
	if err != nil {
		return nil, err
	}
	out := make([]ConversationJSON, len(states))
	for i := range states {
		st := &states[i]
		id := st.ConversationID
		out[i] = ConversationJSON{
			ConversationID: id, ConversationType: int(st.Type), PeerUserID: st.PeerUserID, GroupID: st.GroupID,
			MaxSeq: st.VisibleMax(), ReadSeq: cursors[i].ReadSeq, UnreadCount: unread[id],
			HasUnreadMention: mentions[id] > 0, UnreadMentionCount: mentions[id],
			IsPinned: st.IsPinned, RecvMsgOpt: st.RecvMsgOpt, UpdatedAt: max(st.UpdatedAt, st.LatestSendAt),
		}
		if m, ok := latest[id]; ok {
			j := chat.ToJSON(&m)
			out[i].LatestMsg = &j
		}
	}
	return out, nil
}

// Update changes userID's is_pinned and/or recv_msg_opt of a conversation
// it belongs to (creating its row if the conversation has no message yet)
// and returns the conversation as the list shows it. recv_msg_opt of a
// group takes effect for pushes at once (the member's cached entry is
// updated in place). Errors: bad_request, not_conversation_member,
// server_busy (the cache could not be updated: retry; the setting is
// stored).
func (s *Conversations) Update(ctx context.Context, userID string, req UpdateRequest) (ConversationJSON, error) {
	if err := req.Validate(); err != nil {
		return ConversationJSON{}, err
	}
	if _, err := s.access.Member(ctx, userID, req.ConversationID); err != nil {
		return ConversationJSON{}, err
	}
	set := store.ConversationSettings{OwnerID: userID, ConversationID: req.ConversationID,
		IsPinned: req.IsPinned, RecvMsgOpt: req.RecvMsgOpt}
	groupID := domain.GroupIDOf(req.ConversationID)
	if groupID != "" {
		set.Type, set.GroupID = domain.SessionGroup, groupID
	} else {
		set.Type = domain.SessionSingle
		set.PeerUserID, _ = domain.SinglePeer(req.ConversationID, userID)
	}
	if err := s.store.UpdateSettings(ctx, set); err != nil {
		return ConversationJSON{}, err
	}
	if groupID == "" && req.RecvMsgOpt != nil && s.noPush != nil {
		s.noPush.Invalidate(userID)
	}
	if groupID != "" && req.RecvMsgOpt != nil && s.groups != nil {
		if err := s.groups.SetRecvMsgOpt(ctx, groupID, userID, *req.RecvMsgOpt); err != nil {
			return ConversationJSON{}, fmt.Errorf("%w: member cache of group %s: %w", domain.ErrServerBusy, groupID, err)
		}
	}
	states, err := s.store.States(ctx, userID, []string{req.ConversationID})
	if err != nil {
		return ConversationJSON{}, err
	}
	convs, err := s.render(ctx, userID, states)
	if err != nil || len(convs) == 0 {
		return ConversationJSON{}, err
	}
	return convs[0], nil
}

// Delete hides a conversation from userID's list until its next message
// (one above the highest seq issued now, whether saved yet or not). The
// messages stay, the cursors do not move, the other party and members are
// unaffected; when the conversation comes back, unread_count counts only
// what arrived after the delete. Errors: bad_request,
// not_conversation_member.
func (s *Conversations) Delete(ctx context.Context, userID string, req DeleteRequest) (struct{}, error) {
	if err := req.Validate(); err != nil {
		return struct{}{}, err
	}
	b, err := s.access.Member(ctx, userID, req.ConversationID)
	if err != nil {
		return struct{}{}, err
	}
	hi, err := s.access.Highest(ctx, req.ConversationID, math.MaxInt64)
	if err != nil {
		return struct{}{}, err
	}
	if seq := b.Clamp(hi); seq > 0 {
		if err := s.store.Hide(ctx, userID, req.ConversationID, seq); err != nil {
			return struct{}{}, err
		}
	}
	return struct{}{}, nil
}
