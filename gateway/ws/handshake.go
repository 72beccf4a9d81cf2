package ws

import (
	"context"
	"encoding/json"
	"net/url"
	"strconv"
	"strings"

	"github.com/cloudwego/hertz/pkg/app"
	"github.com/cloudwego/hertz/pkg/app/server"
	"github.com/cloudwego/hertz/pkg/protocol"
	"github.com/hertz-contrib/websocket"
	"github.com/nexo-im/nexo/gateway/wire"
)

// Handler is the Hertz handler for GET /ws?token=&send_id=&platform_id=&operation_id=
// (the token may come as a `token` or `Authorization: Bearer` header
// instead, for clients that can set headers).
// It checks the origin (ws.allowed_origins), the token (signature, expiry,
// revocation, via Authenticator), that send_id (when given) is the token's
// user_id and that platform_id is the token's platform, and only then
// upgrades. A refusal is an HTTP error with the wire.Envelope body and no
// upgrade: 401 for token and identity failures, 403 for a foreign origin,
// 503 while shutting down. The Hertz server must be set up with
// ConfigureHertz.
func (s *Server) Handler() app.HandlerFunc {
	return func(ctx context.Context, rc *app.RequestContext) {
		if s.shuttingDown() {
			s.reject(rc, wire.NewError(wire.ReasonServerBusy, "the server is shutting down"))
			return
		}
		// Copies: the RequestContext is recycled after the upgrade.
		origin := string(rc.Request.Header.Peek("Origin"))
		if !originAllowed(s.cfg.AllowedOrigins, origin, string(rc.Host())) {
			s.reject(rc, wire.NewError(wire.ReasonForbidden, "origin not allowed (ws.allowed_origins)"))
			return
		}
		token, sendID := handshakeToken(rc), rc.Query("send_id")
		platform, operationID := rc.Query("platform_id"), rc.Query("operation_id")
		if token == "" {
			s.reject(rc, wire.NewError(wire.ReasonTokenMissing, "the token query parameter is required"))
			return
		}
		userID, platformID, jti, expiresAt, err := s.auth.Authenticate(ctx, token)
		if err != nil {
			e := wire.FromError(err)
			if e.HTTPStatus >= 500 {
				// Not a verdict on the token: the token store did not answer.
				// Same answer as the HTTP auth middleware.
				s.log.Error("ws authenticate failed", "err", err, "operation_id", operationID,
					"request_id", wire.RequestIDFrom(ctx))
				e = wire.NewError(wire.ReasonServerBusy, "token store unavailable")
			}
			s.reject(rc, e)
			return
		}
		if sendID != "" && sendID != userID {
			s.reject(rc, wire.NewError(wire.ReasonUnauthorized, "send_id does not match the token's user_id"))
			return
		}
		if p, err := strconv.Atoi(platform); err != nil || p != platformID {
			s.reject(rc, wire.NewError(wire.ReasonUnauthorized, "platform_id is required and must match the token's platform_id"))
			return
		}
		c := s.newConn(userID, platformID, jti, expiresAt, operationID)
		if err := s.upgrader.Upgrade(rc, func(wc *websocket.Conn) {
			releaseRequest(rc)
			s.serve(c, wc)
		}); err != nil {
			s.log.Debug("ws upgrade refused", "err", err, "user_id", userID)
		}
	}
}

// ConfigureHertz sets the two Hertz engine switches the gateway relies on;
// call it on the server that mounts Handler, before Run.
//
//   - NoHijackConnPool: pooled hijacked connections are unsafe with
//     hertz-contrib/websocket (its README).
//   - KeepHijackedConns: without it Hertz's hijacked connection ignores
//     Close (Hertz closes it itself when the handler returns), so a session
//     could not close its connection from another goroutine: slow-consumer
//     closes, kicks and write failures would wait for the read deadline.
//     With it, every session closes its own connection before returning.
func ConfigureHertz(h *server.Hertz) {
	h.NoHijackConnPool = true
	h.KeepHijackedConns = true
}

// releaseRequest drops what Hertz parsed of the upgrade request and built
// of its 101 answer (headers, query, cookies: about 3 KiB with a browser's
// headers). Hertz holds the RequestContext until the connection ends and
// its Reset keeps those buffers for reuse, so fresh values are the only way
// to free them; everything the session needs was copied before the
// upgrade. Hertz resets the context again when the connection ends, which
// zero values allow. See docs/gateway.md, "The handshake's stack".
func releaseRequest(rc *app.RequestContext) {
	rc.Request = protocol.Request{}
	rc.Response = protocol.Response{}
}

// handshakeToken reads the token from the query (browsers cannot set
// headers on a WebSocket), else from the `token` header or
// `Authorization: Bearer`, as the HTTP API accepts it.
func handshakeToken(rc *app.RequestContext) string {
	if t := rc.Query("token"); t != "" {
		return t
	}
	if t := strings.TrimSpace(string(rc.GetHeader("token"))); t != "" {
		return t
	}
	if scheme, t, ok := strings.Cut(string(rc.GetHeader("Authorization")), " "); ok && strings.EqualFold(scheme, "Bearer") {
		return strings.TrimSpace(t)
	}
	return ""
}

// reject answers a refused handshake with the error envelope.
func (s *Server) reject(rc *app.RequestContext, e *wire.Error) {
	s.metrics.rejects.WithLabelValues(string(e.Reason)).Inc()
	// The HTTP middleware set the request's id as a response header.
	body, err := json.Marshal(wire.Fail(e.WithRequestID(string(rc.Response.Header.Peek(wire.RequestIDHeader)))))
	if err != nil { // cannot happen: the envelope holds strings and ints
		body = []byte(`{"err_code":1500,"err_msg":"internal_error","data":{"reason":"internal_error"}}`)
	}
	rc.Data(e.HTTPStatus, "application/json; charset=utf-8", body)
	rc.Abort()
}

// upgradeError answers a request that is not a valid WebSocket handshake.
func (s *Server) upgradeError(rc *app.RequestContext, status int, reason error) {
	e := wire.NewError(wire.ReasonBadRequest, reason.Error())
	e.HTTPStatus = status
	s.reject(rc, e)
}

// originAllowed applies ws.allowed_origins: "*" allows any origin; an empty
// list allows only an Origin whose host equals the request's Host; otherwise
// the Origin must equal one entry (scheme://host[:port], case-insensitive).
// Requests without Origin (non-browser clients) are allowed: the token is
// what authenticates them.
func originAllowed(allowed []string, origin, host string) bool {
	if origin == "" {
		return true
	}
	if len(allowed) == 0 {
		u, err := url.Parse(origin)
		return err == nil && strings.EqualFold(u.Host, host)
	}
	for _, a := range allowed {
		if a == "*" || strings.EqualFold(strings.TrimSuffix(a, "/"), origin) {
			return true
		}
	}
	return false
}
