package chat

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"strconv"

	"github.com/cloudwego/hertz/pkg/app"

	"github.com/nexo-im/nexo/gateway"
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

// Handlers binds the message service to HTTP and WebSocket.
type Handlers struct {
	send    *Service
	pull    *Puller
	maxBody int
	log     *slog.Logger
}

// NewHandlers returns the handlers; maxBody is http.max_body_bytes.
func NewHandlers(send *Service, pull *Puller, maxBody int, log *slog.Logger) *Handlers {
	return &Handlers{send: send, pull: pull, maxBody: maxBody, log: log}
}

// Register mounts POST /msg/send, GET /msg/pull, POST /msg/pull_by_seqs and
// WS 1003, 1002, 1005.
func (h *Handlers) Register(r Router, w WSRouter) {
	r.Route("POST", "/msg/send", h.httpSend, true)
	r.Route("GET", "/msg/pull", h.httpPull, true)
	r.Route("POST", "/msg/pull_by_seqs", h.httpPullBySeqs, true)
	w.Handle(wire.ReqSendMsg, h.wsSend)
	w.Handle(wire.ReqPullMsgRange, h.wsPull)
	w.Handle(wire.ReqPullBySeqList, h.wsPullBySeqs)
}

// PullBySeqsRequest is the data of WS 1002 and the body of POST /msg/pull_by_seqs.
type PullBySeqsRequest struct {
	ConversationID string  `json:"conversation_id"`
	Seqs           []int64 `json:"seqs"`
}

func (h *Handlers) httpSend(ctx context.Context, c *app.RequestContext) {
	claims, _ := auth.ClaimsOf(c)
	var req SendRequest
	if err := gateway.BindJSON(c, h.maxBody, &req); err != nil {
		gateway.WriteError(ctx, c, h.log, err)
		return
	}
	ack, err := h.send.Send(ctx, claims.UserID, "", req)
	if err != nil {
		gateway.WriteError(ctx, c, h.log, err)
		return
	}
	gateway.WriteOK(c, ack)
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
				gateway.WriteError(ctx, c, h.log, badField(q.name, "must be an integer"))
				return
			}
			*q.dst = n
		}
	}
	if v := c.Query("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil {
			gateway.WriteError(ctx, c, h.log, badField("limit", "must be an integer"))
			return
		}
		req.Limit = n
	}
	if req.ConversationID == "" {
		gateway.WriteError(ctx, c, h.log, badField("conversation_id", "required"))
		return
	}
	res, err := h.pull.Pull(ctx, claims.UserID, req)
	if err != nil {
		gateway.WriteError(ctx, c, h.log, err)
		return
	}
	gateway.WriteOK(c, res)
}

func (h *Handlers) httpPullBySeqs(ctx context.Context, c *app.RequestContext) {
	claims, _ := auth.ClaimsOf(c)
	var req PullBySeqsRequest
	if err := gateway.BindJSON(c, h.maxBody, &req); err != nil {
		gateway.WriteError(ctx, c, h.log, err)
		return
	}
	res, err := h.pullBySeqs(ctx, claims.UserID, req)
	if err != nil {
		gateway.WriteError(ctx, c, h.log, err)
		return
	}
	gateway.WriteOK(c, res)
}

func (h *Handlers) pullBySeqs(ctx context.Context, userID string, req PullBySeqsRequest) (PullResult, error) {
	if req.ConversationID == "" {
		return PullResult{}, badField("conversation_id", "required")
	}
	if len(req.Seqs) == 0 {
		return PullResult{}, badField("seqs", "required, at least one seq")
	}
	return h.pull.PullBySeqs(ctx, userID, req.ConversationID, req.Seqs)
}

func (h *Handlers) wsSend(ctx context.Context, c *ws.Conn, data json.RawMessage) (any, error) {
	var req SendRequest
	if err := decodeStrict(data, &req); err != nil {
		return nil, err
	}
	return h.send.Send(ctx, c.UserID(), c.ID(), req)
}

func (h *Handlers) wsPull(ctx context.Context, c *ws.Conn, data json.RawMessage) (any, error) {
	var req PullRequest
	if err := decodeStrict(data, &req); err != nil {
		return nil, err
	}
	if req.ConversationID == "" {
		return nil, badField("conversation_id", "required")
	}
	return h.pull.Pull(ctx, c.UserID(), req)
}

func (h *Handlers) wsPullBySeqs(ctx context.Context, c *ws.Conn, data json.RawMessage) (any, error) {
	var req PullBySeqsRequest
	if err := decodeStrict(data, &req); err != nil {
		return nil, err
	}
	return h.pullBySeqs(ctx, c.UserID(), req)
}

// decodeStrict decodes a frame's data object, refusing unknown fields and
// wrong types with bad_request.
func decodeStrict(data json.RawMessage, dst any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(dst); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			return badField(te.Field, "must be %s", te.Type.Kind())
		}
		return wire.NewError(wire.ReasonBadRequest, "data: "+err.Error())
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return wire.NewError(wire.ReasonBadRequest, "data: trailing content")
	}
	return nil
}
