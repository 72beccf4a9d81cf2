package routes

import (
	"cmp"
	"context"
	"encoding/json"
	"log/slog"

	"github.com/cloudwego/hertz/pkg/app"

	"github.com/nexo-im/nexo/gateway/api"
	"github.com/nexo-im/nexo/gateway/auth"
	"github.com/nexo-im/nexo/gateway/limits"
	"github.com/nexo-im/nexo/gateway/wire"
	"github.com/nexo-im/nexo/gateway/ws"
	"github.com/nexo-im/nexo/services/chat"
)

// Chat is the message service's routes: sending and pulling messages.
type Chat struct {
	send    *chat.Service
	pull    *chat.Puller
	maxBody int
	limit   *limits.UserRequests
	log     *slog.Logger
}

// NewChat returns the message routes over send and pull; maxBody is
// http.max_body_bytes. limit, when not nil, counts every HTTP send
// (WebSocket requests are counted by the WebSocket gateway itself, against
// the same limit).
func NewChat(send *chat.Service, pull *chat.Puller, maxBody int, limit *limits.UserRequests, log *slog.Logger) *Chat {
	return &Chat{send: send, pull: pull, maxBody: maxBody, limit: limit, log: log}
}

// Register mounts POST /msg/send, GET /msg/pull, POST /msg/pull_by_seqs and
// WS 1003, 1005, 1002.
func (h *Chat) Register(r HTTP, w WS) {
	r.Route("POST", "/msg/send", api.JSON(h.maxBody, h.log, h.httpSend), true)
	r.Route("GET", "/msg/pull", h.httpPull, true)
	r.Route("POST", "/msg/pull_by_seqs", api.JSON(h.maxBody, h.log, h.pullBySeqs), true)
	w.Handle(wire.ReqSendMsg, h.wsSend)
	w.Handle(wire.ReqPullMsgRange, api.Frame(h.pull.Pull))
	w.Handle(wire.ReqPullBySeqList, api.Frame(h.pullBySeqs))
}

// httpSend is POST /msg/send: the token's user and platform are the send's
// origin; there is no sending connection to skip.
func (h *Chat) httpSend(ctx context.Context, user string, req chat.SendRequest) (chat.AckJSON, error) {
	if h.limit != nil {
		if err := h.limit.AllowRequest(ctx, user); err != nil {
			return chat.AckJSON{}, err
		}
	}
	claims, _ := auth.ClaimsFromContext(ctx)
	return h.send.Send(ctx, chat.Origin{UserID: user, PlatformID: claims.PlatformID}, req)
}

// wsSend is 1003: the sending connection is the send's origin, so its own
// pushes skip it.
func (h *Chat) wsSend(ctx context.Context, c *ws.Conn, data json.RawMessage) (any, error) {
	var req chat.SendRequest
	if err := api.DecodeJSON(data, len(data), &req); err != nil {
		return nil, err
	}
	return h.send.Send(ctx, chat.Origin{UserID: c.UserID(), ConnID: c.ID(), PlatformID: c.PlatformID()}, req)
}

// httpPull is GET /msg/pull: WS 1005's request as query parameters.
func (h *Chat) httpPull(ctx context.Context, c *app.RequestContext) {
	claims, _ := auth.ClaimsOf(c)
	req := chat.PullRequest{ConversationID: c.Query("conversation_id")}
	// The first error, in this order.
	err := cmp.Or(
		api.QueryInt(c, "begin_seq", &req.BeginSeq),
		api.QueryInt(c, "end_seq", &req.EndSeq),
		api.QueryInt(c, "limit", &req.Limit),
	)
	if err == nil {
		err = req.Validate()
	}
	if err != nil {
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

func (h *Chat) pullBySeqs(ctx context.Context, userID string, req chat.PullBySeqsRequest) (chat.PullResult, error) {
	return h.pull.PullBySeqs(ctx, userID, req.ConversationID, req.Seqs)
}
