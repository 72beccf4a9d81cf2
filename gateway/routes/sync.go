package routes

import (
	"cmp"
	"context"
	"log/slog"
	"strings"

	"github.com/cloudwego/hertz/pkg/app"

	"github.com/nexo-im/nexo/gateway/api"
	"github.com/nexo-im/nexo/gateway/auth"
	"github.com/nexo-im/nexo/gateway/wire"
	"github.com/nexo-im/nexo/gateway/ws"
	"github.com/nexo-im/nexo/services/sync"
)

// Sync is the sync service's routes: cursors and newest seqs, the
// conversation list and settings, recall.
type Sync struct {
	cursors *sync.Cursors
	convs   *sync.Conversations
	recall  *sync.Recall
	maxBody int
	log     *slog.Logger
}

// NewSync returns the sync routes; maxBody is http.max_body_bytes.
func NewSync(cursors *sync.Cursors, convs *sync.Conversations, recall *sync.Recall, maxBody int, log *slog.Logger) *Sync {
	return &Sync{cursors: cursors, convs: convs, recall: recall, maxBody: maxBody, log: log}
}

// Register mounts GET /msg/newest_seq, POST /msg/mark_read, POST
// /msg/revoke, GET /conversation/list, PUT /conversation/update, POST
// /conversation/delete (all authenticated) and WS 1001, 1006, 1101, 1102.
func (h *Sync) Register(r HTTP, w WS) {
	r.Route("GET", "/msg/newest_seq", h.newestSeq, true)
	r.Route("POST", "/msg/mark_read", api.JSON(h.maxBody, h.log, h.markRead), true)
	r.Route("POST", "/msg/revoke", api.JSON(h.maxBody, h.log, h.recall.Revoke), true)
	r.Route("GET", "/conversation/list", h.list, true)
	r.Route("PUT", "/conversation/update", api.JSON(h.maxBody, h.log, h.convs.Update), true)
	r.Route("POST", "/conversation/delete", api.JSON(h.maxBody, h.log, h.convs.Delete), true)
	w.Handle(wire.ReqGetNewestSeq, api.Frame(h.cursors.Newest))
	w.Handle(wire.ReqGetConvMaxReadSeq, api.Frame(h.cursors.MaxRead))
	w.Handle(wire.ReqMsgAck, api.Frame(h.ack))
	w.Handle(wire.ReqRevokeMsg, api.Frame(h.recall.Revoke))
}

// ack is 1101, from the connection it came over.
func (h *Sync) ack(ctx context.Context, userID string, req sync.AckRequest) (sync.AckResult, error) {
	return h.cursors.Ack(ctx, userID, ackSource(ctx), req)
}

// markRead is POST /msg/mark_read, from the token's platform.
func (h *Sync) markRead(ctx context.Context, userID string, req sync.MarkReadRequest) (sync.AckResult, error) {
	return h.cursors.MarkRead(ctx, userID, ackSource(ctx), req)
}

// ackSource is the origin of the request ctx belongs to: its WebSocket
// connection, or for HTTP the token's platform.
func ackSource(ctx context.Context) sync.AckSource {
	if c, ok := ws.ConnFrom(ctx); ok {
		return sync.AckSource{PlatformID: c.PlatformID(), ConnID: c.ID()}
	}
	if claims, ok := auth.ClaimsFromContext(ctx); ok {
		return sync.AckSource{PlatformID: claims.PlatformID}
	}
	return sync.AckSource{}
}

// newestSeq serves GET /msg/newest_seq?conversation_ids=a,b (the
// parameter may also repeat); absent means every conversation, paged with
// cursor= and limit=.
func (h *Sync) newestSeq(ctx context.Context, c *app.RequestContext) {
	claims, _ := auth.ClaimsOf(c)
	req := sync.NewestSeqRequest{Cursor: c.Query("cursor")}
	if err := api.QueryInt(c, "limit", &req.Limit); err != nil {
		api.WriteError(ctx, c, h.log, err)
		return
	}
	for _, v := range c.QueryArgs().PeekAll("conversation_ids") {
		for _, id := range strings.Split(string(v), ",") {
			if id = strings.TrimSpace(id); id != "" {
				req.ConversationIDs = append(req.ConversationIDs, id)
			}
		}
	}
	res, err := h.cursors.Newest(ctx, claims.UserID, req)
	if err != nil {
		api.WriteError(ctx, c, h.log, err)
		return
	}
	api.WriteOK(c, res)
}

// list serves GET /conversation/list?offset=&limit=.
func (h *Sync) list(ctx context.Context, c *app.RequestContext) {
	claims, _ := auth.ClaimsOf(c)
	var offset, limit int
	// The first error, in this order.
	if err := cmp.Or(api.QueryInt(c, "offset", &offset), api.QueryInt(c, "limit", &limit)); err != nil {
		api.WriteError(ctx, c, h.log, err)
		return
	}
	res, err := h.convs.List(ctx, claims.UserID, offset, limit)
	if err != nil {
		api.WriteError(ctx, c, h.log, err)
		return
	}
	api.WriteOK(c, res)
}
