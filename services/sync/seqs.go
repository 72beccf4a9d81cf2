package sync

import (
	"context"
	"fmt"

	"github.com/nexo-im/nexo/domain"
	"github.com/nexo-im/nexo/store"
)

// StateReader reads a user's conversation states (store.ConversationRepo):
// given ones (nil IDs means all of them), or a page in conversation ID order.
type StateReader interface {
	States(ctx context.Context, ownerID string, conversationIDs []string) ([]store.ConversationState, error)
	StatesPage(ctx context.Context, ownerID, afterID string, limit int) ([]store.ConversationState, error)
}

// Newest-seq request limits: conversation_ids of one request, and the page
// of every conversation (cursor/limit) when none are given.
const (
	maxNewestIDs = 1000
	// MaxNewestPage caps limit of a newest-seq page (WS 1001, GET /msg/newest_seq).
	MaxNewestPage = 1000
	// DefaultNewestPage is its limit when absent.
	DefaultNewestPage = 500
)

// Cursors serves the cursor requests: client ACKs (1101), mark_read, and
// the newest seqs (1001, 1006). ACKs are validated here and written by the
// CursorWriter; reads overlay what it has not written yet.
type Cursors struct {
	access *Access
	writer *CursorWriter
	states StateReader
}

// NewCursors returns the cursor service.
func NewCursors(access *Access, writer *CursorWriter, states StateReader) *Cursors {
	return &Cursors{access: access, writer: writer, states: states}
}

// Ack advances userID's delivered cursor (ack_type delivered) or its read
// and delivered cursors (read) in req.ConversationID to req.Seq, with
// GREATEST semantics: a repeated or lower ACK changes nothing. src is the
// connection the ACK came over, for the cursor audit lines. Errors:
// bad_request, not_conversation_member, bad_seq (above the highest seq
// issued in the conversation — saved or accepted — or above the caller's
// cap).
func (s *Cursors) Ack(ctx context.Context, userID string, src AckSource, req AckRequest) (AckResult, error) {
	if err := req.Validate(); err != nil {
		return AckResult{}, err
	}
	b, err := s.access.Member(ctx, userID, req.ConversationID)
	if err != nil {
		return AckResult{}, err
	}
	if err := s.access.CheckSeq(ctx, req.ConversationID, b, req.Seq); err != nil {
		return AckResult{}, err
	}
	read := int64(0)
	if req.AckType == string(domain.AckRead) {
		read = req.Seq
	}
	s.writer.Advance(userID, req.ConversationID, req.Seq, read, src)
	return AckResult{AckType: req.AckType, ConversationID: req.ConversationID, Seq: req.Seq}, nil
}

// MarkRead is Ack with ack_type read (POST /msg/mark_read).
func (s *Cursors) MarkRead(ctx context.Context, userID string, src AckSource, req MarkReadRequest) (AckResult, error) {
	return s.Ack(ctx, userID, src, AckRequest{AckType: string(domain.AckRead), ConversationID: req.ConversationID, Seq: req.Seq})
}

// NewestSeq is Newest for the given conversation IDs, or the first page of
// every conversation when ids is empty.
func (s *Cursors) NewestSeq(ctx context.Context, userID string, ids []string) (NewestSeqResult, error) {
	return s.Newest(ctx, userID, NewestSeqRequest{ConversationIDs: ids})
}

// Newest returns, per conversation, the seqs userID sees: of the given IDs
// (at most 1,000; every one must be the caller's, else
// not_conversation_member), or, when none are given, of a page of all its
// conversations (deleted ones included) in conversation ID order: limit 0
// is DefaultNewestPage, above MaxNewestPage is bad_request; cursor is the
// previous page's next_cursor, which is "" after the last page. Costs one
// query, plus a member-cache lookup per group ID given.
func (s *Cursors) Newest(ctx context.Context, userID string, req NewestSeqRequest) (NewestSeqResult, error) {
	ids := req.ConversationIDs
	switch {
	case len(ids) > maxNewestIDs:
		return NewestSeqResult{}, domain.BadField("conversation_ids", "at most %d per request (got %d); without conversation_ids every conversation is listed a page at a time", maxNewestIDs, len(ids))
	case len(ids) > 0 && (req.Cursor != "" || req.Limit != 0):
		return NewestSeqResult{}, domain.BadField("cursor", "cursor and limit page every conversation; not with conversation_ids")
	case req.Limit < 0 || req.Limit > MaxNewestPage:
		return NewestSeqResult{}, domain.BadField("limit", "must be 1–%d (default %d)", MaxNewestPage, DefaultNewestPage)
	case len(req.Cursor) > maxConversationID:
		return NewestSeqResult{}, domain.BadField("cursor", "is not a cursor this list returned")
	}
	out := NewestSeqResult{Conversations: map[string]SeqInfo{}}
	if len(ids) == 0 {
		limit := req.Limit
		if limit == 0 {
			limit = DefaultNewestPage
		}
		states, err := s.states.StatesPage(ctx, userID, req.Cursor, limit+1)
		if err != nil {
			return NewestSeqResult{}, err
		}
		if len(states) > limit {
			states = states[:limit]
			out.NextCursor = states[limit-1].ConversationID
		}
		for i := range states {
			st := &states[i]
			out.Conversations[st.ConversationID] = s.info(st, Bounds{Min: st.VisibleMin(), Cap: st.Cursor.MaxSeq})
		}
		return out, nil
	}
	bounds := make(map[string]Bounds, len(ids))
	unique := make([]string, 0, len(ids))
	for _, id := range ids {
		if _, dup := bounds[id]; dup {
			continue
		}
		b, err := s.access.Member(ctx, userID, id)
		if err != nil {
			return NewestSeqResult{}, fmt.Errorf("conversation_ids: %w", err)
		}
		bounds[id] = b
		unique = append(unique, id)
	}
	states, err := s.states.States(ctx, userID, unique)
	if err != nil {
		return NewestSeqResult{}, err
	}
	for i := range states {
		out.Conversations[states[i].ConversationID] = s.info(&states[i], bounds[states[i].ConversationID])
	}
	for _, id := range unique {
		if _, ok := out.Conversations[id]; !ok { // no row yet: nothing saved for the caller
			st := store.ConversationState{ConversationID: id, Cursor: domain.Cursor{UserID: userID, ConversationID: id}}
			out.Conversations[id] = s.info(&st, bounds[id])
		}
	}
	return out, nil
}

// info is a state as the caller sees it under bounds b, with the cursor
// advances not written yet.
func (s *Cursors) info(st *store.ConversationState, b Bounds) SeqInfo {
	c := st.Cursor
	s.writer.Overlay(&c)
	return SeqInfo{MaxSeq: b.Clamp(st.MaxSeq), MinSeq: max(b.Min, st.MinSeq, 1), ReadSeq: c.ReadSeq, DeliveredSeq: c.DeliveredSeq}
}

// MaxRead returns a conversation's max_seq and the caller's read_seq
// (1006). Errors as NewestSeq.
func (s *Cursors) MaxRead(ctx context.Context, userID string, req MaxReadRequest) (MaxReadResult, error) {
	if err := req.Validate(); err != nil {
		return MaxReadResult{}, err
	}
	res, err := s.NewestSeq(ctx, userID, []string{req.ConversationID})
	if err != nil {
		return MaxReadResult{}, err
	}
	info := res.Conversations[req.ConversationID]
	return MaxReadResult{ConversationID: req.ConversationID, MaxSeq: info.MaxSeq, ReadSeq: info.ReadSeq}, nil
}
