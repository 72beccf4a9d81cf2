package ws

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime/debug"
	"strings"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

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

	conn *Conn // the connection the request came over (ConnFrom)
}

type metaKey struct{}

// MetaFrom returns the Meta of the request a handler's ctx belongs to.
func MetaFrom(ctx context.Context) (Meta, bool) {
	m, ok := ctx.Value(metaKey{}).(Meta)
	return m, ok
}

// ConnFrom returns the connection whose request a handler's ctx belongs
// to; ok is false outside a WebSocket handler (an HTTP request).
func ConnFrom(ctx context.Context) (*Conn, bool) {
	m, ok := ctx.Value(metaKey{}).(Meta)
	return m.conn, ok && m.conn != nil
}

// inbound is a decoded request frame.
type inbound struct {
	Meta
	Data json.RawMessage
	// SendID is the envelope's optional send_id (OpenIM clients send it);
	// dispatch refuses it when it is not the connection's user.
	SendID string
}

// rawRequest reads each envelope field as raw JSON, so a field of the wrong
// type is reported as that field's error instead of failing the whole frame.
// Other members land in Other: OpenIM clients send token, which is ignored
// (identity comes from the handshake token only; send_id is checked).
type rawRequest struct {
	ReqIdentifier jsontext.Value            `json:"req_identifier"`
	MsgIncr       jsontext.Value            `json:"msg_incr"`
	OperationID   jsontext.Value            `json:"operation_id"`
	SendID        jsontext.Value            `json:"send_id"`
	Data          jsontext.Value            `json:"data"`
	Other         map[string]jsontext.Value `json:",unknown"`
}

// envelopeNames are the members rawRequest reads; a name that differs from
// one of them only in letter case is refused rather than ignored.
var envelopeNames = []string{"req_identifier", "msg_incr", "operation_id", "send_id", "data"}

// decodeRequest parses one text frame. On error, identified says whether
// req_identifier could be read (the error is then answered under that
// identifier, else under 3001). msg_incr and operation_id are filled as far
// as they could be read, so even an error can echo them. Identity comes from
// the handshake token only: an envelope send_id is read so that dispatch can
// refuse one naming another user; other unknown top-level fields (OpenIM's
// token) are ignored.
// The frame is read with the rules of api.DecodeJSON: a name twice in
// any object, invalid UTF-8 or a lone surrogate anywhere makes the whole
// frame bad_request (3001), and a case variant of an envelope name
// (Req_Identifier) is bad_request too.
func decodeRequest(msg []byte) (in inbound, identified bool, err *wire.Error) {
	var raw rawRequest
	if e := jsonv2.Unmarshal(msg, &raw); e != nil {
		return in, false, frameError(e)
	}
	// Best effort first, so every later error can echo them.
	msgIncrOK := decodeOptionalString(raw.MsgIncr, &in.MsgIncr)
	opOK := decodeOptionalString(raw.OperationID, &in.OperationID)
	variant := caseVariantError(raw.Other)
	if len(raw.ReqIdentifier) == 0 || jsonv2.Unmarshal(raw.ReqIdentifier, &in.ReqIdentifier) != nil {
		if variant != nil {
			return in, false, variant
		}
		return in, false, wire.NewError(wire.ReasonBadRequest, "req_identifier must be an integer")
	}
	switch {
	case variant != nil:
		return in, true, variant
	case !msgIncrOK:
		return in, true, wire.NewError(wire.ReasonBadRequest, "msg_incr must be a string")
	case !opOK:
		return in, true, wire.NewError(wire.ReasonBadRequest, "operation_id must be a string")
	case !decodeOptionalString(raw.SendID, &in.SendID):
		return in, true, wire.NewError(wire.ReasonBadRequest, "send_id must be a string")
	}
	data := bytes.TrimSpace(raw.Data)
	switch {
	case len(data) == 0 || bytes.Equal(data, []byte("null")):
		in.Data = emptyObject
	case data[0] == '{':
		in.Data = json.RawMessage(data)
	default:
		return in, true, wire.NewError(wire.ReasonBadRequest, "data must be a JSON object")
	}
	return in, true, nil
}

// caseVariantError refuses a member whose name differs from an envelope
// name only in letter case; other unknown members are ignored.
func caseVariantError(other map[string]jsontext.Value) *wire.Error {
	for name := range other {
		for _, known := range envelopeNames {
			if strings.EqualFold(name, known) {
				return wire.NewError(wire.ReasonBadRequest,
					fmt.Sprintf("%s is not a known field (names are case-sensitive; did you mean %s?)", name, known))
			}
		}
	}
	return nil
}

// frameError is the bad_request for a frame that does not decode at all.
func frameError(err error) *wire.Error {
	var syntax *jsontext.SyntacticError
	if errors.As(err, &syntax) && errors.Is(err, jsontext.ErrDuplicateName) {
		field := "frame"
		if syntax.JSONPointer != "" {
			field = strings.ReplaceAll(strings.TrimPrefix(string(syntax.JSONPointer), "/"), "/", ".")
		}
		return wire.NewError(wire.ReasonBadRequest, field+" appears twice in one object (duplicate keys are refused)")
	}
	if errors.As(err, &syntax) {
		return wire.NewError(wire.ReasonBadRequest, fmt.Sprintf("frame is not valid JSON (at byte %d: %s)",
			syntax.ByteOffset, strings.TrimPrefix(syntax.Err.Error(), "jsontext: ")))
	}
	return wire.NewError(wire.ReasonBadRequest, "frame is not a JSON object")
}

// decodeOptionalString reads an absent, null or string field into dst; it
// reports false for any other JSON type.
func decodeOptionalString(raw jsontext.Value, dst *string) bool {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return true
	}
	return jsonv2.Unmarshal(raw, dst) == nil
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
//
// refused, when not nil, is the rate limiter's refusal: the frame is
// decoded only to answer it under its req_identifier, and no handler runs.
func (s *Server) dispatch(ctx context.Context, c *Conn, msg []byte, refused error) outcome {
	in, identified, werr := decodeRequest(msg)
	if werr == nil && refused != nil {
		werr = wire.FromError(refused)
	}
	if werr != nil {
		id := wire.PushError
		if identified {
			id = in.ReqIdentifier
		}
		return outcome{resp: errorResponse(id, in.MsgIncr, in.OperationID, clientMsgID(in.Data), werr), reason: werr.Reason}
	}
	if in.SendID != "" && in.SendID != c.UserID() {
		werr = wire.NewError(wire.ReasonBadRequest, "send_id: does not match the token's user_id (identity comes from the token; omit send_id or send your own)")
		return outcome{resp: errorResponse(in.ReqIdentifier, in.MsgIncr, in.OperationID, clientMsgID(in.Data), werr), reason: werr.Reason}
	}
	h := s.handler(in.ReqIdentifier)
	if h == nil {
		werr = wire.NewError(wire.ReasonUnknownRequest, fmt.Sprintf("no handler for req_identifier %d", in.ReqIdentifier))
		return outcome{resp: errorResponse(in.ReqIdentifier, in.MsgIncr, in.OperationID, clientMsgID(in.Data), werr), reason: werr.Reason}
	}
	meta := in.Meta
	meta.conn = c
	data, err := s.call(context.WithValue(ctx, metaKey{}, meta), h, c, in)
	if err != nil {
		// wire.Public is the one place that strips server-side detail, for
		// HTTP and WebSocket alike; the hidden cause is logged under a
		// request id that the error frame carries.
		var hidden bool
		werr, hidden = wire.Public(err)
		if hidden {
			id := wire.NewRequestID()
			werr = werr.WithRequestID(id)
			s.log.Error("ws handler failed", "req_identifier", in.ReqIdentifier, "conn_id", c.ID(),
				"user_id", c.UserID(), "operation_id", in.OperationID, "request_id", id, "err", err)
		}
		cid := clientMsgID(in.Data)
		if IsGateReason(werr.Reason) {
			return outcome{resp: errorResponse(wire.PushError, in.MsgIncr, in.OperationID, cid, werr), reason: werr.Reason, gate: true}
		}
		return outcome{resp: errorResponse(in.ReqIdentifier, in.MsgIncr, in.OperationID, cid, werr), reason: werr.Reason}
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
	return mustEncode(errorResponse(o.resp.ReqIdentifier, o.resp.MsgIncr, o.resp.OperationID, "",
		wire.NewError(wire.ReasonInternalError, "")))
}

// clientMsgID reads data.client_msg_id of a failed request (only on the
// error path) so its error frame names the send it answers; "" when data has
// no such string field. Its length is capped like a valid client_msg_id's
// (64), so an error never echoes an unbounded value.
func clientMsgID(data json.RawMessage) string {
	if len(data) == 0 {
		return ""
	}
	var d struct {
		ClientMsgID any `json:"client_msg_id"`
	}
	if json.Unmarshal(data, &d) != nil {
		return ""
	}
	s, ok := d.ClientMsgID.(string)
	if !ok || len(s) > 64 {
		return ""
	}
	return s
}
