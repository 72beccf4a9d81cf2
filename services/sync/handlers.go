package sync

import (
	"context"
	"log/slog"
	"strconv"
	"strings"

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

// Handlers binds the cursor, conversation and recall services to HTTP and
// WebSocket.
type Handlers struct {
	cursors *Cursors
	convs   *Conversations
	recall  *Recall
	maxBody int
	log     *slog.Logger
}

// NewHandlers returns the handlers; maxBody is http.max_body_bytes.
func NewHandlers(cursors *Cursors, convs *Conversations, recall *Recall, maxBody int, log *slog.Logger) *Handlers {
	return &Handlers{cursors: cursors, convs: convs, recall: recall, maxBody: maxBody, log: log}
}

// Register mounts GET /msg/newest_seq, POST /msg/mark_read, POST
// /msg/revoke, GET /conversation/list, PUT /conversation/update, POST
// /conversation/delete (all authenticated) and WS 1001, 1006, 1101, 1102.
func (h *Handlers) Register(r Router, w WSRouter) {
	r.Route("GET", "/msg/newest_seq", h.newestSeq, true)
	r.Route("POST", "/msg/mark_read", api.JSON(h.maxBody, h.log, h.cursors.MarkRead), true)
	r.Route("POST", "/msg/revoke", api.JSON(h.maxBody, h.log, h.recall.Revoke), true)
	r.Route("GET", "/conversation/list", h.list, true)
	r.Route("PUT", "/conversation/update", api.JSON(h.maxBody, h.log, h.convs.Update), true)
	r.Route("POST", "/conversation/delete", api.JSON(h.maxBody, h.log, h.convs.Delete), true)
	w.Handle(wire.ReqGetNewestSeq, api.Frame(h.cursors.Newest))
	w.Handle(wire.ReqGetConvMaxReadSeq, api.Frame(h.cursors.MaxRead))
	w.Handle(wire.ReqMsgAck, api.Frame(h.cursors.Ack))
	w.Handle(wire.ReqRevokeMsg, api.Frame(h.recall.Revoke))
}

// newestSeq serves GET /msg/newest_seq?conversation_ids=a,b (the
// parameter may also repeat); absent means every conversation, paged with
// cursor= and limit=.
func (h *Handlers) newestSeq(ctx context.Context, c *app.RequestContext) {
	claims, _ := auth.ClaimsOf(c)
	req := NewestSeqRequest{Cursor: c.Query("cursor")}
	if v := c.Query("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil {
			api.WriteError(ctx, c, h.log, domain.BadField("limit", "must be an integer"))
			return
		}
		req.Limit = n
	}
	var ids []string
	for _, v := range c.QueryArgs().PeekAll("conversation_ids") {
		for _, id := range strings.Split(string(v), ",") {
			if id = strings.TrimSpace(id); id != "" {
				ids = append(ids, id)
			}
		}
	}
	req.ConversationIDs = ids
	res, err := h.cursors.Newest(ctx, claims.UserID, req)
	if err != nil {
		api.WriteError(ctx, c, h.log, err)
		return
	}
	api.WriteOK(c, res)
}

// list serves GET /conversation/list?offset=&limit=.
func (h *Handlers) list(ctx context.Context, c *app.RequestContext) {
	claims, _ := auth.ClaimsOf(c)
	var page [2]int
	for i, name := range []string{"offset", "limit"} {
		if v := c.Query(name); v != "" {
			n, err := strconv.Atoi(v)
			if err != nil {
				api.WriteError(ctx, c, h.log, domain.BadField(name, "must be an integer"))
				return
			}
			page[i] = n
		}
	}
	res, err := h.convs.List(ctx, claims.UserID, page[0], page[1])
	if err != nil {
		api.WriteError(ctx, c, h.log, err)
		return
	}
	api.WriteOK(c, res)
}
