package chat

import (
	"context"
	"encoding/json"
	"log/slog"
	"strconv"

	"github.com/cloudwego/hertz/pkg/app"

	"github.com/nexo-im/nexo/domain"
	"github.com/nexo-im/nexo/gateway/api"
	"github.com/nexo-im/nexo/gateway/auth"
	"github.com/nexo-im/nexo/gateway/wire"
	"github.com/nexo-im/nexo/gateway/ws"
)

// Router registers HTTP routes (gateway.Server).
type Router interface {
	Route(method, path string, handler app.HandlerFunc, authenticated bool)
}

// WSRouter registers WebSocket request handlers (ws.Server).
type WSRouter interface {
	Handle(reqIdentifier int, h ws.HandlerFunc)
}

// RequestLimiter is the per-user request limit (limits.UserRequests):
// nil when allowed, else too_many_requests with a retry-after.
type RequestLimiter interface {
	AllowRequest(ctx context.Context, userID string) error
}

// Handlers binds the message service to HTTP and WebSocket.
type Handlers struct {
	send    *Service
	pull    *Puller
	maxBody int
	limit   RequestLimiter
	log     *slog.Logger
}

// NewHandlers returns the handlers; maxBody is http.max_body_bytes. limit,
// when not nil, is counted by every HTTP send (WebSocket requests are
// counted by the WebSocket gateway itself, against the same limit).
func NewHandlers(send *Service, pull *Puller, maxBody int, limit RequestLimiter, log *slog.Logger) *Handlers {
	return &Handlers{send: send, pull: pull, maxBody: maxBody, limit: limit, log: log}
}

// Register mounts POST /msg/send, GET /msg/pull, POST /msg/pull_by_seqs and
// WS 1003, 1002, 1005.
func (h *Handlers) Register(r Router, w WSRouter) {
	send := func(ctx context.Context, user string, req SendRequest) (AckJSON, error) {
		if h.limit != nil {
			if err := h.limit.AllowRequest(ctx, user); err != nil {
				return AckJSON{}, err
			}
		}
		claims, _ := auth.ClaimsFromContext(ctx)
		return h.send.Send(ctx, Origin{UserID: user, PlatformID: claims.PlatformID}, req)
	}
	r.Route("POST", "/msg/send", api.JSON(h.maxBody, h.log, send), true)
	r.Route("GET", "/msg/pull", h.httpPull, true)
	r.Route("POST", "/msg/pull_by_seqs", api.JSON(h.maxBody, h.log, h.pullBySeqs), true)
	w.Handle(wire.ReqSendMsg, h.wsSend)
	w.Handle(wire.ReqPullMsgRange, api.Frame(h.pull.Pull))
	w.Handle(wire.ReqPullBySeqList, api.Frame(h.pullBySeqs))
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

// Validate implements api.Validator.
func (r *PullRequest) Validate() error {
	if r.ConversationID == "" {
		return domain.BadField("conversation_id", "required")
	}
	return nil
}

func (h *Handlers) httpPull(ctx context.Context, c *app.RequestContext) {
	claims, _ := auth.ClaimsOf(c)
	req := PullRequest{ConversationID: c.Query("conversation_id")}
	for _, q := range []struct {
		name string
		dst  *int64
	}{{"begin_seq", &req.BeginSeq}, {"end_seq", &req.EndSeq}} {
		if v := c.Query(q.name); v != "" {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				api.WriteError(ctx, c, h.log, domain.BadField(q.name, "must be an integer"))
				return
			}
			*q.dst = n
		}
	}
	if v := c.Query("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil {
			api.WriteError(ctx, c, h.log, domain.BadField("limit", "must be an integer"))
			return
		}
		req.Limit = n
	}
	if err := req.Validate(); err != nil {
		api.WriteError(ctx, c, h.log, err)
		return
	}
	res, err := h.pull.Pull(ctx, claims.UserID, req)
	if err != nil {
		api.WriteError(ctx, c, h.log, err)
		return
	}
	api.WriteOK(c, res)
}

func (h *Handlers) pullBySeqs(ctx context.Context, userID string, req PullBySeqsRequest) (PullResult, error) {
	return h.pull.PullBySeqs(ctx, userID, req.ConversationID, req.Seqs)
}

// wsSend is 1003: the sending connection is the send's origin, so its own
// pushes skip it.
func (h *Handlers) wsSend(ctx context.Context, c *ws.Conn, data json.RawMessage) (any, error) {
	var req SendRequest
	if err := api.DecodeJSON(data, len(data), &req); err != nil {
		return nil, err
	}
	return h.send.Send(ctx, Origin{UserID: c.UserID(), ConnID: c.ID(), PlatformID: c.PlatformID()}, req)
}
