package search

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/nexo-im/nexo/domain"
	"github.com/nexo-im/nexo/services/chat"
	"github.com/nexo-im/nexo/store"
)

// Page sizes: limit 0 asks for DefaultLimit; more than MaxLimit is refused.
const (
	DefaultLimit = 20
	MaxLimit     = 100
)

// Orders of a message search.
const (
	OrderTime      = "time"      // newest first (the default)
	OrderRelevance = "relevance" // the backend's rank, then newest first
)

// Repo is the search table and the directory lookups (store.SearchRepo).
type Repo interface {
	Search(ctx context.Context, q store.SearchQuery) ([]store.SearchHit, error)
	SearchUsers(ctx context.Context, keyword string, limit int) ([]domain.User, error)
	SearchGroups(ctx context.Context, userID, keyword string, joinable []string, limit int) ([]domain.Group, error)
}

// Service answers searches. Every message search runs as one user and
// the store applies that user's visibility inside the query.
type Service struct {
	repo    Repo
	timeout time.Duration
}

// NewService returns the service; timeout is search.timeout.
func NewService(repo Repo, timeout time.Duration) *Service {
	return &Service{repo: repo, timeout: timeout}
}

// MsgRequest is the body of POST /msg/search and the data of WS 1105.
// From and To bound send_at (Unix ms, inclusive); Cursor is the
// next_cursor of the previous page.
type MsgRequest struct {
	Keyword        string `json:"keyword"`
	ConversationID string `json:"conversation_id,omitempty"`
	SenderID       string `json:"sender_id,omitempty"`
	MsgTypes       []int  `json:"msg_types,omitempty"`
	From           int64  `json:"from,omitempty"`
	To             int64  `json:"to,omitempty"`
	Cursor         string `json:"cursor,omitempty"`
	Limit          int    `json:"limit,omitempty"`
	Order          string `json:"order,omitempty"`
}

// Validate implements api.Validator.
func (r *MsgRequest) Validate() error {
	k, err := CheckKeyword("keyword", r.Keyword)
	if err != nil {
		return err
	}
	r.Keyword = k
	if r.ConversationID != "" {
		if _, ok := domain.ConversationSessionType(r.ConversationID); !ok {
			return domain.BadField("conversation_id", "is not a conversation id")
		}
	}
	if r.SenderID != "" {
		if err := domain.CheckID("sender_id", r.SenderID); err != nil {
			return err
		}
	}
	for _, t := range r.MsgTypes {
		if !domain.MsgType(t).UserSendable() {
			return domain.BadField("msg_types", "has %d, not a searchable message type", t)
		}
	}
	switch {
	case r.From < 0 || r.To < 0:
		return domain.BadField("from", "and to must not be negative")
	case r.To > 0 && r.From > r.To:
		return domain.BadField("from", "must not be after to")
	case r.Limit < 0 || r.Limit > MaxLimit:
		return domain.BadField("limit", "must be 0..%d", MaxLimit)
	case r.Order != "" && r.Order != OrderTime && r.Order != OrderRelevance:
		return domain.BadField("order", "must be %q or %q", OrderTime, OrderRelevance)
	}
	return nil
}

// ResultJSON is one hit: the message as a pull returns it, and where the
// keyword matched.
type ResultJSON struct {
	chat.MessageJSON
	Highlight HighlightJSON `json:"highlight"`
}

// MsgResult is a page of hits; NextCursor is "" after the last page.
type MsgResult struct {
	Results    []ResultJSON `json:"results"`
	NextCursor string       `json:"next_cursor"`
}

// cursorJSON is the opaque cursor: the last hit's place (time order) or
// the next offset (relevance order).
type cursorJSON struct {
	SendAt int64  `json:"t,omitempty"`
	Conv   string `json:"c,omitempty"`
	Seq    int64  `json:"s,omitempty"`
	Offset int    `json:"o,omitempty"`
}

func encodeCursor(c cursorJSON) string {
	b, _ := json.Marshal(c)
	return base64.RawURLEncoding.EncodeToString(b)
}

func decodeCursor(s string) (cursorJSON, error) {
	var c cursorJSON
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err == nil {
		err = json.Unmarshal(b, &c)
	}
	if err != nil || c.Offset < 0 {
		return c, domain.BadField("cursor", "is not a next_cursor this server returned")
	}
	return c, nil
}

// Messages searches the messages userID may see. Errors: bad_request,
// search_timeout past search.timeout, or the store's error.
func (s *Service) Messages(ctx context.Context, userID string, req MsgRequest) (MsgResult, error) {
	if err := req.Validate(); err != nil {
		return MsgResult{}, err
	}
	limit := req.Limit
	if limit == 0 {
		limit = DefaultLimit
	}
	q := store.SearchQuery{UserID: userID, Keyword: req.Keyword, ConversationID: req.ConversationID, SenderID: req.SenderID,
		From: req.From, To: req.To, Relevance: req.Order == OrderRelevance, Limit: limit + 1, Timeout: s.timeout}
	for _, t := range req.MsgTypes {
		q.MsgTypes = append(q.MsgTypes, domain.MsgType(t))
	}
	if req.Cursor != "" {
		c, err := decodeCursor(req.Cursor)
		if err != nil {
			return MsgResult{}, err
		}
		q.Offset = c.Offset
		if !q.Relevance {
			q.Before = &store.SearchPosition{SendAt: c.SendAt, ConversationID: c.Conv, Seq: c.Seq}
		}
	}
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	hits, err := s.repo.Search(ctx, q)
	if err != nil {
		if errors.Is(err, store.ErrSearchTimeout) || errors.Is(err, context.DeadlineExceeded) {
			return MsgResult{}, domain.NewError(domain.ErrSearchTimeout,
				fmt.Sprintf("the search took longer than %s; narrow it (conversation_id, from, to) or retry", s.timeout))
		}
		return MsgResult{}, err
	}
	res := MsgResult{Results: make([]ResultJSON, 0, min(len(hits), limit))}
	for i := range hits {
		if i == limit {
			last := hits[i-1].Message
			if q.Relevance {
				res.NextCursor = encodeCursor(cursorJSON{Offset: q.Offset + limit})
			} else {
				res.NextCursor = encodeCursor(cursorJSON{SendAt: last.SendAt, Conv: last.ConversationID, Seq: last.Seq})
			}
			break
		}
		h := &hits[i]
		res.Results = append(res.Results, ResultJSON{MessageJSON: chat.ToJSON(&h.Message), Highlight: Highlight(h.Field, h.Body, req.Keyword)})
	}
	return res, nil
}
