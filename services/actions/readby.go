package actions

import (
	"context"
	"sort"

	"github.com/nexo-im/nexo/domain"
)

// MaxReadByPage is the most members one read-by page lists (and its
// default).
const MaxReadByPage = 500

// ReadByRequest is the query of GET /msg/read_by and the data of WS 1110.
// Cursor is the next_cursor of the previous page ("" for the first); Limit
// is at most MaxReadByPage (0 = that).
type ReadByRequest struct {
	ConversationID string `json:"conversation_id" query:"conversation_id"`
	Seq            int64  `json:"seq" query:"seq"`
	Cursor         string `json:"cursor" query:"cursor"`
	Limit          int    `json:"limit" query:"limit"`
}

// Validate implements api.Validator.
func (r *ReadByRequest) Validate() error {
	if r.ConversationID == "" {
		return domain.BadField("conversation_id", "required")
	}
	if r.Seq < 1 {
		return domain.BadField("seq", "required, >= 1")
	}
	if r.Limit < 0 || r.Limit > MaxReadByPage {
		return domain.BadField("limit", "must be 0–%d", MaxReadByPage)
	}
	return nil
}

// ReadByResult says who of the members who could see a message has read
// it. ReadCount and MemberCount are totals; ReadUserIDs and UnreadUserIDs
// split one page of the members (sorted by user ID, at most limit);
// NextCursor is "" on the last page.
type ReadByResult struct {
	ConversationID string   `json:"conversation_id"`
	Seq            int64    `json:"seq"`
	ReadUserIDs    []string `json:"read_user_ids"`
	UnreadUserIDs  []string `json:"unread_user_ids"`
	ReadCount      int      `json:"read_count"`
	MemberCount    int      `json:"member_count"`
	NextCursor     string   `json:"next_cursor"`
}

// ReadBy answers who has read the message at (conversation_id, seq): the
// members who could see that seq (joined at or before it and, if they
// left, capped at or above it; in a single chat the two parties), minus its
// sender, split by whether their read cursor (seq_users.read_seq) reached
// it. A read ACK counts once its cursor is written (within
// sync.cursor_flush_interval). Errors: bad_request,
// not_conversation_member, bad_seq, message_not_found.
func (s *Service) ReadBy(ctx context.Context, userID string, req ReadByRequest) (ReadByResult, error) {
	if err := req.Validate(); err != nil {
		return ReadByResult{}, err
	}
	conv, seq := req.ConversationID, req.Seq
	b, err := s.d.Access.Member(ctx, userID, conv)
	if err != nil {
		return ReadByResult{}, err
	}
	if err := s.checkSeq(ctx, conv, caller{bounds: b}, seq); err != nil {
		return ReadByResult{}, err
	}
	msgs, err := s.d.Messages.BySeqs(ctx, conv, []int64{seq})
	if err != nil {
		return ReadByResult{}, err
	}
	if len(msgs) == 0 || msgs[0].Status == domain.StatusFailed {
		return ReadByResult{}, domain.NewError(domain.ErrMessageNotFound, "no message at this seq (yet)")
	}
	members, err := s.viewers(ctx, conv, seq)
	if err != nil {
		return ReadByResult{}, err
	}
	readers, err := s.readers(ctx, conv, seq)
	if err != nil {
		return ReadByResult{}, err
	}
	limit := req.Limit
	if limit == 0 {
		limit = MaxReadByPage
	}
	res := ReadByResult{ConversationID: conv, Seq: seq, ReadUserIDs: []string{}, UnreadUserIDs: []string{}}
	others := members[:0:0]
	for _, u := range members {
		if u != msgs[0].SenderID {
			others = append(others, u)
			if readers[u] {
				res.ReadCount++
			}
		}
	}
	res.MemberCount = len(others)
	start := sort.Search(len(others), func(i int) bool { return others[i] > req.Cursor })
	end := min(start+limit, len(others))
	for _, u := range others[start:end] {
		if readers[u] {
			res.ReadUserIDs = append(res.ReadUserIDs, u)
		} else {
			res.UnreadUserIDs = append(res.UnreadUserIDs, u)
		}
	}
	if end < len(others) {
		res.NextCursor = others[end-1]
	}
	return res, nil
}

// viewers lists, sorted, who could see seq of conv.
func (s *Service) viewers(ctx context.Context, conv string, seq int64) ([]string, error) {
	if groupID := domain.GroupIDOf(conv); groupID != "" {
		if s.d.Viewers == nil {
			return nil, domain.ErrNotConversationMember
		}
		return s.d.Viewers.SawSeq(ctx, groupID, seq)
	}
	a, b, ok := domain.SingleParties(conv)
	if !ok {
		return nil, domain.BadField("conversation_id", "malformed")
	}
	if a == b {
		return []string{a}, nil
	}
	out := []string{a, b}
	sort.Strings(out)
	return out, nil
}

// readers is the set of users of conv whose read cursor reached seq.
func (s *Service) readers(ctx context.Context, conv string, seq int64) (map[string]bool, error) {
	rows, err := s.d.Store.ReadersFrom(ctx, conv, seq)
	if err != nil {
		return nil, err
	}
	out := make(map[string]bool, len(rows))
	for _, r := range rows {
		out[r.UserID] = true
	}
	return out, nil
}
