package ws

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"runtime/debug"

	"github.com/nexo-im/nexo/gateway/wire"
)

// HandlerFunc handles one request of its req_identifier. data is the
// request's data object (never null: an absent or null data arrives as {}).
// The result becomes the response's data (nil means {}); an error is mapped
// by wire.FromError into err_code/err_msg and data {reason, detail}. A
// request error keeps the connection open; an error whose reason is a gate
// reason (IsGateReason) is answered with 3001 and closes it. ctx is
// cancelled when the connection closes and carries the request's Meta.
// Handlers of one connection run one at a time, in arrival order.
type HandlerFunc func(ctx context.Context, c *Conn, data json.RawMessage) (any, error)

// Meta is the envelope of the request being handled, echoed by its response.
type Meta struct {
	ReqIdentifier int
	MsgIncr       string
	OperationID   string
}

type metaKey struct{}

// MetaFrom returns the Meta of the request a handler's ctx belongs to.
func MetaFrom(ctx context.Context) (Meta, bool) {
	m, ok := ctx.Value(metaKey{}).(Meta)
	return m, ok
}

// inbound is a decoded request frame.
type inbound struct {
	Meta
	Data json.RawMessage
}

// rawRequest reads each envelope field as raw JSON, so a field of the wrong
// type is reported as that field's error instead of failing the whole frame.
type rawRequest struct {
	ReqIdentifier json.RawMessage `json:"req_identifier"`
	MsgIncr       json.RawMessage `json:"msg_incr"`
	OperationID   json.RawMessage `json:"operation_id"`
	Data          json.RawMessage `json:"data"`
}

// decodeRequest parses one text frame. On error, identified says whether
// req_identifier could be read (the error is then answered under that
// identifier, else under 3001). msg_incr and operation_id are filled as far
// as they could be read, so even an error can echo them. Unknown top-level
// fields (OpenIM's token, send_id) are ignored: identity comes from the
// handshake token only.
func decodeRequest(msg []byte) (in inbound, identified bool, err *wire.Error) {
	var raw rawRequest
	if e := json.Unmarshal(msg, &raw); e != nil {
		return in, false, wire.NewError(wire.ReasonBadRequest, "frame is not a JSON object")
	}
	// Best effort first, so every later error can echo them.
	msgIncrOK := decodeOptionalString(raw.MsgIncr, &in.MsgIncr)
	opOK := decodeOptionalString(raw.OperationID, &in.OperationID)
	if len(raw.ReqIdentifier) == 0 || json.Unmarshal(raw.ReqIdentifier, &in.ReqIdentifier) != nil {
		return in, false, wire.NewError(wire.ReasonBadRequest, "req_identifier must be an integer")
	}
	switch {
	case !msgIncrOK:
		return in, true, wire.NewError(wire.ReasonBadRequest, "msg_incr must be a string")
	case !opOK:
		return in, true, wire.NewError(wire.ReasonBadRequest, "operation_id must be a string")
	}
	data := bytes.TrimSpace(raw.Data)
	switch {
	case len(data) == 0 || bytes.Equal(data, []byte("null")):
		in.Data = emptyObject
	case data[0] == '{':
		in.Data = data
	default:
		return in, true, wire.NewError(wire.ReasonBadRequest, "data must be a JSON object")
	}
	return in, true, nil
}

// decodeOptionalString reads an absent, null or string field into dst; it
// reports false for any other JSON type.
func decodeOptionalString(raw json.RawMessage, dst *string) bool {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return true
	}
	return json.Unmarshal(raw, dst) == nil
}

// outcome is what one inbound frame produced: the frame to send and
// whether the connection closes after it (a gate error).
type outcome struct {
	resp   wire.Response
	reason wire.Reason // set when resp reports an error
	gate   bool
}

// dispatch decodes one inbound text frame, runs its handler and returns the
// answer. It never panics on any input (a handler panic becomes
// internal_error) and touches no socket, so it can be driven without a
// network (FuzzDecodeAndDispatch).
func (s *Server) dispatch(ctx context.Context, c *Conn, msg []byte) outcome {
	in, identified, werr := decodeRequest(msg)
	if werr != nil {
		id := wire.PushError
		if identified {
			id = in.ReqIdentifier
		}
		return outcome{resp: errorResponse(id, in.MsgIncr, in.OperationID, werr), reason: werr.Reason}
	}
	h := s.handler(in.ReqIdentifier)
	if h == nil {
		werr = wire.NewError(wire.ReasonUnknownRequest, fmt.Sprintf("no handler for req_identifier %d", in.ReqIdentifier))
		return outcome{resp: errorResponse(in.ReqIdentifier, in.MsgIncr, in.OperationID, werr), reason: werr.Reason}
	}
	data, err := s.call(context.WithValue(ctx, metaKey{}, in.Meta), h, c, in)
	if err != nil {
		werr = wire.FromError(err)
		if werr.Reason == wire.ReasonInternalError {
			s.log.Error("ws handler failed", "req_identifier", in.ReqIdentifier, "conn_id", c.ID(),
				"user_id", c.UserID(), "operation_id", in.OperationID, "err", err)
		}
		if IsGateReason(werr.Reason) {
			return outcome{resp: errorResponse(wire.PushError, in.MsgIncr, in.OperationID, werr), reason: werr.Reason, gate: true}
		}
		return outcome{resp: errorResponse(in.ReqIdentifier, in.MsgIncr, in.OperationID, werr), reason: werr.Reason}
	}
	return outcome{resp: wire.Response{
		ReqIdentifier: in.ReqIdentifier,
		MsgIncr:       in.MsgIncr,
		OperationID:   in.OperationID,
		Data:          data,
	}}
}

// call runs h, turning a panic into an error (logged with its stack) so a
// handler bug answers internal_error instead of killing the process.
func (s *Server) call(ctx context.Context, h HandlerFunc, c *Conn, in inbound) (data any, err error) {
	defer func() {
		if p := recover(); p != nil {
			s.log.Error("ws handler panicked", "req_identifier", in.ReqIdentifier, "conn_id", c.ID(),
				"panic", fmt.Sprint(p), "stack", string(debug.Stack()))
			data, err = nil, fmt.Errorf("handler %d panicked: %v", in.ReqIdentifier, p)
		}
	}()
	return h(ctx, c, in.Data)
}

// encodeOutcome encodes the answer; a handler result json cannot encode
// becomes internal_error for that request.
func (s *Server) encodeOutcome(o outcome) Frame {
	f, err := EncodeFrame(o.resp)
	if err == nil {
		return f
	}
	s.log.Error("ws response not encodable", "req_identifier", o.resp.ReqIdentifier, "err", err)
	return mustEncode(errorResponse(o.resp.ReqIdentifier, o.resp.MsgIncr, o.resp.OperationID,
		wire.NewError(wire.ReasonInternalError, "")))
}
