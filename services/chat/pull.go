package chat

import (
	"context"
	"fmt"
	"slices"

	"github.com/nexo-im/nexo/domain"
)

// MaxPullLimit caps one pull: a range pull asking for more is clamped, a
// pull by seqs naming more is refused.
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

// InFlight lists a conversation's seqs that are accepted but not yet
// settled — they may still be saved (streams.InFlightReader). An error
// means "unknown": every seq without a row is then treated as in flight.
type InFlight interface {
	InFlight(ctx context.Context, conversationID string) ([]int64, error)
}

// Cleared is the seq up to which a user cleared a conversation's history
// for themselves (privacy.Service.ClearedSeq); nothing at or below it is
// served to them.
type Cleared interface {
	ClearedSeq(ctx context.Context, userID, conversationID string) (int64, error)
}

// Annotator adds to pulled messages what members did to them after they
// were sent, as the caller sees it (actions.Annotator): messages the caller
// deleted for itself become {seq, status: "deleted"}, reactions are
// counted, a quote of a message since recalled or deleted becomes
// unavailable. It changes msgs in place.
type Annotator interface {
	Annotate(ctx context.Context, viewer, conversationID string, msgs []MessageJSON) error
}

// Puller serves pulls.
type Puller struct {
	cleared  Cleared
	reader   Reader
	ranges   *rangeLookup // reader's Range, shared by concurrent pulls of one window
	seqs     MaxSeqs
	groups   GroupBounds
	inflight InFlight
	actions  Annotator // nil: messages as stored
}

// UseActions makes every pull apply a's annotations (docs/actions.md).
func (p *Puller) UseActions(a Annotator) { p.actions = a }

// annotate applies the actions' annotations, if any.
func (p *Puller) annotate(ctx context.Context, viewer, conversationID string, msgs []MessageJSON) error {
	if p.actions == nil || len(msgs) == 0 {
		return nil
	}
	return p.actions.Annotate(ctx, viewer, conversationID, msgs)
}

// NewPuller returns a Puller; groups may be nil until group chat is wired
// (group pulls are then refused); inflight may be nil when nothing is ever
// in flight (every seq without a row is then a gap for good). When seqs
// also reads many conversations at once (BatchMaxSeqs), concurrent pulls
// share their max_seq reads (maxSeqLookup); concurrent pulls of the same
// window share their read of its rows (rangeLookup).
func NewPuller(reader Reader, seqs MaxSeqs, groups GroupBounds, inflight InFlight) *Puller {
	if b, ok := seqs.(BatchMaxSeqs); ok {
		seqs = newMaxSeqLookup(b)
	}
	return &Puller{reader: reader, ranges: newRangeLookup(reader), seqs: seqs, groups: groups, inflight: inflight}
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

// Validate implements api.Validator.
func (r *PullRequest) Validate() error {
	if r.ConversationID == "" {
		return domain.BadField("conversation_id", "required")
	}
	return nil
}

// PullBySeqsRequest is the data of WS 1002 and the body of POST /msg/pull_by_seqs.
type PullBySeqsRequest struct {
	ConversationID string  `json:"conversation_id"`
	Seqs           []int64 `json:"seqs"`
}

// Validate implements api.Validator.
func (r *PullBySeqsRequest) Validate() error {
	if r.ConversationID == "" {
		return domain.BadField("conversation_id", "required")
	}
	if len(r.Seqs) == 0 {
		return domain.BadField("seqs", "required, at least one seq")
	}
	if len(r.Seqs) > MaxPullLimit {
		// Refused rather than cut: a silent cut looks like missing messages.
		return domain.BadField("seqs", "has %d entries; at most %d per request (ask for the rest in another request)", len(r.Seqs), MaxPullLimit)
	}
	return nil
}

// PullResult is the answer: messages ascending by seq with no seq missing
// between the first and the last (a seq that will never hold a readable
// message as a placeholder), and the caller's visible bounds. A seq that is
// accepted but not saved yet is never a placeholder: a range pull stops
// before it (see Pull) and PendingSeqs names it.
type PullResult struct {
	Messages []MessageJSON `json:"messages"`
	MinSeq   int64         `json:"min_seq"`
	MaxSeq   int64         `json:"max_seq"`
	// PendingSeqs are seqs of the window (range pull) or of the request
	// (pull by seqs) that are in flight — accepted, not saved yet — and so
	// left out: "not yet", pull them again later. Ascending, at most
	// MaxPullLimit; omitted when none.
	PendingSeqs []int64 `json:"pending_seqs,omitempty"`
}

// WithCleared makes the puller honour each user's cleared history
// (POST /conversation/clear): one indexed read per pull. It returns p.
func (p *Puller) WithCleared(c Cleared) *Puller {
	p.cleared = c
	return p
}

// Bounds returns userID's visible [minSeq, maxSeq] in a conversation:
// maxSeq is the highest saved seq, capped for a member who left; minSeq
// is above the seq the user cleared the history up to (WithCleared). Errors:
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
	if p.cleared != nil {
		cleared, err := p.cleared.ClearedSeq(ctx, userID, conversationID)
		if err != nil {
			return 0, 0, err
		}
		minSeq = max(minSeq, cleared+1)
	}
	return minSeq, maxSeq, nil
}

// Pull returns a window of saved messages the caller may see. The page is
// the run of settled seqs that starts at the window's anchor — begin_seq
// going up, otherwise the window's end going down — and stops at the first
// seq that is in flight, so a client can advance its contiguous prefix over
// every placeholder it gets.
func (p *Puller) Pull(ctx context.Context, userID string, req PullRequest) (PullResult, error) {
	if req.BeginSeq < 0 || req.EndSeq < 0 || req.Limit < 0 {
		return PullResult{}, domain.BadField("begin_seq", "seqs and limit must not be negative")
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
	// The in-flight marks are read after max_seq and before the rows: a
	// seq settled in between is then among the rows (see
	// streams.InFlightReader).
	pending := p.pending(ctx, req.ConversationID)
	msgs, err := p.ranges.Range(ctx, req.ConversationID, begin, end, limit)
	if err != nil {
		return PullResult{}, err
	}
	res.Messages, res.PendingSeqs = settledRun(msgs, begin, end, req.BeginSeq == 0, pending)
	if err := p.annotate(ctx, userID, req.ConversationID, res.Messages); err != nil {
		return PullResult{}, err
	}
	return res, nil
}

// pendingSet is what a pull knows of in-flight seqs; unknown (Redis did
// not answer) counts every seq without a row as in flight.
type pendingSet struct {
	seqs    map[int64]bool
	unknown bool
}

func (s pendingSet) has(seq int64) bool { return s.unknown || s.seqs[seq] }

func (p *Puller) pending(ctx context.Context, conversationID string) pendingSet {
	if p.inflight == nil {
		return pendingSet{}
	}
	seqs, err := p.inflight.InFlight(ctx, conversationID)
	if err != nil {
		return pendingSet{unknown: true}
	}
	set := make(map[int64]bool, len(seqs))
	for _, s := range seqs {
		set[s] = true
	}
	return pendingSet{seqs: set}
}

// settledRun walks [begin, end] from begin up (or from end down when down
// is set) and returns the messages and placeholders it passes, ascending,
// stopping at the first seq with no row that is in flight. pendingSeqs are
// the window's in-flight seqs without a row (only the first when the set is
// unknown).
func settledRun(msgs []domain.Message, begin, end int64, down bool, pending pendingSet) (out []MessageJSON, pendingSeqs []int64) {
	byseq := make(map[int64]*domain.Message, len(msgs))
	for i := range msgs {
		byseq[msgs[i].Seq] = &msgs[i]
	}
	for seq := begin; seq <= end && len(pendingSeqs) < MaxPullLimit; seq++ {
		if byseq[seq] == nil && pending.seqs[seq] {
			pendingSeqs = append(pendingSeqs, seq)
		}
	}
	lo, hi, step := begin, end, int64(1)
	if down {
		lo, hi, step = end, begin, -1
	}
	out = make([]MessageJSON, 0, end-begin+1)
	for seq := lo; (step > 0 && seq <= hi) || (step < 0 && seq >= hi); seq += step {
		m := byseq[seq]
		if m == nil && pending.has(seq) {
			if pending.unknown {
				pendingSeqs = []int64{seq}
			}
			break
		}
		if m != nil {
			out = append(out, ToJSON(m))
		} else {
			out = append(out, Placeholder(seq))
		}
	}
	if down {
		slices.Reverse(out)
	}
	return out, pendingSeqs
}

// PullBySeqs returns the given seqs (ascending, deduplicated, at most
// MaxPullLimit) that the caller may see; a seq that is in flight (or whose
// state is unknown because Redis did not answer) is left out and named in
// PendingSeqs; any other seq outside its bounds or with no readable message
// comes back as a placeholder.
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
	pending := p.pending(ctx, conversationID)
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
		m, ok := byseq[s]
		switch {
		case ok:
			res.Messages = append(res.Messages, ToJSON(m))
		case s >= minSeq && pending.has(s):
			res.PendingSeqs = append(res.PendingSeqs, s)
		default:
			res.Messages = append(res.Messages, Placeholder(s))
		}
	}
	if err := p.annotate(ctx, userID, conversationID, res.Messages); err != nil {
		return PullResult{}, err
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
