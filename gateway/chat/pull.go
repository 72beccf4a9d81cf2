package chat

import (
	"context"
	"fmt"
	"slices"

	"github.com/nexo-im/nexo/domain"
)

// MaxPullLimit caps one pull (seed design §3.4.3); larger asks are clamped.
const MaxPullLimit = 100

// Reader reads stored messages (store.MessageRepo).
type Reader interface {
	Range(ctx context.Context, conversationID string, begin, end int64, limit int) ([]domain.Message, error)
	BySeqs(ctx context.Context, conversationID string, seqs []int64) ([]domain.Message, error)
}

// MaxSeqs reads a conversation's highest saved seq (store.SeqRepo).
type MaxSeqs interface {
	MaxSeq(ctx context.Context, conversationID string) (int64, error)
}

// GroupBounds gives a group member's visibility bounds: the first seq it may
// see and the last (0 = no cap; set when it quit or was kicked). Errors:
// domain.ErrNotConversationMember for someone who was never a member.
type GroupBounds interface {
	Bounds(ctx context.Context, groupID, userID string) (minSeq, maxSeq int64, err error)
}

// Puller serves pulls.
type Puller struct {
	reader Reader
	seqs   MaxSeqs
	groups GroupBounds
}

// NewPuller returns a Puller; groups may be nil until group chat is wired
// (group pulls are then refused).
func NewPuller(reader Reader, seqs MaxSeqs, groups GroupBounds) *Puller {
	return &Puller{reader: reader, seqs: seqs, groups: groups}
}

// PullRequest is the data of WS 1005 and the query of GET /msg/pull. With
// begin_seq the window runs up from it; with only end_seq it is the limit
// seqs ending there ("load earlier"); with neither, the newest limit seqs.
type PullRequest struct {
	ConversationID string `json:"conversation_id" query:"conversation_id"`
	BeginSeq       int64  `json:"begin_seq" query:"begin_seq"`
	EndSeq         int64  `json:"end_seq" query:"end_seq"`
	Limit          int    `json:"limit" query:"limit"`
}

// PullResult is the answer: messages ascending by seq, every seq of the
// window present (a seq with no readable message as a placeholder), and
// the caller's visible bounds.
type PullResult struct {
	Messages []MessageJSON `json:"messages"`
	MinSeq   int64         `json:"min_seq"`
	MaxSeq   int64         `json:"max_seq"`
}

// Bounds returns userID's visible [minSeq, maxSeq] in a conversation:
// maxSeq is the highest saved seq, capped for a member who left. Errors:
// domain.ErrNotConversationMember, domain.ErrInvalidArgument for a
// malformed conversation_id.
func (p *Puller) Bounds(ctx context.Context, userID, conversationID string) (int64, int64, error) {
	minSeq, capSeq := int64(1), int64(0)
	switch t, ok := domain.ConversationSessionType(conversationID); {
	case !ok:
		return 0, 0, fmt.Errorf("conversation_id %q: %w", conversationID, domain.ErrInvalidArgument)
	case t == domain.SessionSingle:
		if _, member := domain.SinglePeer(conversationID, userID); !member {
			return 0, 0, domain.ErrNotConversationMember
		}
	default:
		groupID := domain.GroupIDOf(conversationID)
		if groupID == "" || p.groups == nil {
			return 0, 0, domain.ErrNotConversationMember
		}
		lo, hi, err := p.groups.Bounds(ctx, groupID, userID)
		if err != nil {
			return 0, 0, err
		}
		minSeq, capSeq = max(lo, 1), hi
	}
	maxSeq, err := p.seqs.MaxSeq(ctx, conversationID)
	if err != nil {
		return 0, 0, err
	}
	if capSeq > 0 {
		maxSeq = min(maxSeq, capSeq)
	}
	return minSeq, maxSeq, nil
}

// Pull returns a window of saved messages the caller may see.
func (p *Puller) Pull(ctx context.Context, userID string, req PullRequest) (PullResult, error) {
	if req.BeginSeq < 0 || req.EndSeq < 0 || req.Limit < 0 {
		return PullResult{}, badField("begin_seq", "seqs and limit must not be negative")
	}
	minSeq, maxSeq, err := p.Bounds(ctx, userID, req.ConversationID)
	if err != nil {
		return PullResult{}, err
	}
	limit := req.Limit
	if limit == 0 || limit > MaxPullLimit {
		limit = MaxPullLimit
	}
	res := PullResult{Messages: []MessageJSON{}, MinSeq: minSeq, MaxSeq: maxSeq}
	end := maxSeq
	if req.EndSeq > 0 {
		end = min(req.EndSeq, maxSeq)
	}
	begin := max(req.BeginSeq, minSeq)
	if req.BeginSeq == 0 {
		begin = max(end-int64(limit)+1, minSeq)
	}
	end = min(end, begin+int64(limit)-1)
	if begin > end {
		return res, nil
	}
	msgs, err := p.reader.Range(ctx, req.ConversationID, begin, end, limit)
	if err != nil {
		return PullResult{}, err
	}
	res.Messages = fillRange(msgs, begin, end, limit)
	return res, nil
}

// PullBySeqs returns the given seqs (ascending, deduplicated, at most
// MaxPullLimit) that the caller may see; a seq outside its bounds or with no
// readable message comes back as a placeholder.
func (p *Puller) PullBySeqs(ctx context.Context, userID, conversationID string, seqs []int64) (PullResult, error) {
	minSeq, maxSeq, err := p.Bounds(ctx, userID, conversationID)
	if err != nil {
		return PullResult{}, err
	}
	want := uniqueSorted(seqs, MaxPullLimit)
	var visible []int64
	for _, s := range want {
		if s >= minSeq && s <= maxSeq {
			visible = append(visible, s)
		}
	}
	msgs, err := p.reader.BySeqs(ctx, conversationID, visible)
	if err != nil {
		return PullResult{}, err
	}
	byseq := make(map[int64]*domain.Message, len(msgs))
	for i := range msgs {
		byseq[msgs[i].Seq] = &msgs[i]
	}
	res := PullResult{Messages: make([]MessageJSON, 0, len(want)), MinSeq: minSeq, MaxSeq: maxSeq}
	for _, s := range want {
		if m, ok := byseq[s]; ok {
			res.Messages = append(res.Messages, ToJSON(m))
		} else {
			res.Messages = append(res.Messages, Placeholder(s))
		}
	}
	return res, nil
}

func uniqueSorted(seqs []int64, limit int) []int64 {
	seen := make(map[int64]bool, len(seqs))
	out := make([]int64, 0, min(len(seqs), limit))
	for _, s := range seqs {
		if s > 0 && !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	slices.Sort(out)
	if len(out) > limit {
		out = out[:limit]
	}
	return out
}
