package api

import (
	"context"
	"encoding/json"
	"log/slog"

	"github.com/cloudwego/hertz/pkg/app"

	"github.com/nexo-im/nexo/gateway/auth"
	"github.com/nexo-im/nexo/gateway/ws"
)

// JSON adapts an operation of the caller to an authenticated HTTP route: the
// body decodes strictly into Req (BindJSON: maxBody is http.max_body_bytes),
// do runs as the token's user, and the result or the error is written in
// the envelope.
func JSON[Req, Res any](maxBody int, log *slog.Logger, do func(ctx context.Context, userID string, req Req) (Res, error)) app.HandlerFunc {
	return func(ctx context.Context, c *app.RequestContext) {
		claims, _ := auth.ClaimsOf(c)
		var req Req
		if err := BindJSON(c, maxBody, &req); err != nil {
			WriteError(ctx, c, log, err)
			return
		}
		res, err := do(ctx, claims.UserID, req)
		if err != nil {
			WriteError(ctx, c, log, err)
			return
		}
		WriteOK(c, res)
	}
}

// Frame adapts the same kind of operation to a WebSocket request: the
// frame's data decodes strictly into Req (as JSON does; the frame itself is
// already within ws.read_limit) and do runs as the connection's user.
func Frame[Req, Res any](do func(ctx context.Context, userID string, req Req) (Res, error)) ws.HandlerFunc {
	return func(ctx context.Context, c *ws.Conn, data json.RawMessage) (any, error) {
		var req Req
		if err := DecodeJSON(data, len(data), &req); err != nil {
			return nil, err
		}
		return do(ctx, c.UserID(), req)
	}
}
