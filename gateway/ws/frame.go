package ws

import (
	"bytes"
	"encoding/json"
	"fmt"
	"time"

	"github.com/bytedance/sonic"

	"github.com/nexo-im/nexo/domain"
	"github.com/nexo-im/nexo/gateway/wire"
)

// Frame is one outbound JSON text frame, encoded once and shared read-only by
// every connection it is queued to (a group fanout encodes once). The zero
// Frame is empty and never written.
type Frame struct {
	data []byte
	msg  *MsgRef // the message a push carries: the push audit line names it
}

// MsgRef names the message a push frame carries (or announces, for a
// 2102): the registry writes one "push" audit line per connection it
// queues a tagged frame to (see Deps.Audit).
type MsgRef = domain.MsgRef

// WithMsg returns f tagged with the message it pushes; the bytes are
// shared, not copied.
func (f Frame) WithMsg(r MsgRef) Frame { f.msg = &r; return f }

// Msg returns the message f is tagged with; ok is false for an untagged
// frame.
func (f Frame) Msg() (r MsgRef, ok bool) {
	if f.msg == nil {
		return MsgRef{}, false
	}
	return *f.msg, true
}

// emptyObject is the data of a frame that carries nothing: data is always a
// JSON object on the wire, never null.
var emptyObject = json.RawMessage(`{}`)

// EncodeFrame encodes a server frame (response or push). A nil Data becomes
// {}; a zero Ts becomes the current time in Unix milliseconds, so every frame
// carries the server's time. HTML characters are not escaped, so message text
// keeps its size. The error is a JSON encoding failure of Data (a value json
// cannot encode).
func EncodeFrame(r wire.Response) (Frame, error) {
	if r.Data == nil {
		r.Data = emptyObject
	}
	if r.Ts == 0 {
		r.Ts = time.Now().UnixMilli()
	}
	b, err := frameAPI.Marshal(r)
	if err == nil && hasLineSeparator(b) {
		// U+2028/U+2029: encoding/json escapes them, sonic does not; a
		// frame holding one is rare enough to take the slow encoder.
		b, err = stdMarshal(r)
	}
	if err != nil {
		return Frame{}, fmt.Errorf("encode frame %d: %w", r.ReqIdentifier, err)
	}
	return Frame{data: b}, nil
}

// frameAPI writes what encoding/json with HTML escaping off writes (sorted
// map keys, invalid UTF-8 as U+FFFD, Marshaler output validated and
// compacted) — the golden frames and clients were written against it — at
// about half the CPU (BenchmarkEncodePushFrame in gateway/chat).
var frameAPI = sonic.Config{SortMapKeys: true, CompactMarshaler: true, ValidateString: true}.Froze()

// hasLineSeparator reports whether b holds U+2028 or U+2029 (UTF-8
// E2 80 A8 / E2 80 A9).
func hasLineSeparator(b []byte) bool {
	for {
		i := bytes.Index(b, []byte{0xe2, 0x80})
		if i < 0 || i+2 >= len(b) {
			return false
		}
		if b[i+2] == 0xa8 || b[i+2] == 0xa9 {
			return true
		}
		b = b[i+2:]
	}
}

func stdMarshal(r wire.Response) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(r); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte{'\n'}), nil
}

// Bytes returns the encoded JSON. The slice is shared: do not modify it.
func (f Frame) Bytes() []byte { return f.data }

// IsZero reports whether f holds no frame.
func (f Frame) IsZero() bool { return len(f.data) == 0 }

// errorResponse is the frame that answers a failed request or reports a
// gate error: err_code and err_msg from the error table, data {reason,
// detail, client_msg_id}. reqIdentifier is the request's (echoed) or
// wire.PushError; clientMsgID is the failed request's data.client_msg_id
// (a send's), "" when it had none (then omitted).
func errorResponse(reqIdentifier int, msgIncr, operationID, clientMsgID string, e *wire.Error) wire.Response {
	return wire.Response{
		ReqIdentifier: reqIdentifier,
		MsgIncr:       msgIncr,
		OperationID:   operationID,
		ErrCode:       e.ErrCode,
		ErrMsg:        string(e.Reason),
		Data:          errorData(e, clientMsgID),
	}
}

// errorFrame is a 3001 error push: a gate error before the close, or an
// error not tied to a request (a binary frame).
func errorFrame(e *wire.Error) Frame { return mustEncode(errorResponse(wire.PushError, "", "", "", e)) }

// kickFrame is the 2002 frame a connection displaced by the login policy
// gets before the close.
func kickFrame(policy string) Frame {
	e := wire.NewError(wire.ReasonKicked, "a newer connection of this user took over (ws.login_policy "+policy+")")
	return mustEncode(errorResponse(wire.PushKick, "", "", "", e))
}

// mustEncode encodes a frame built from our own types, which cannot fail;
// a failure is a programming error surfaced as a panic in tests.
func mustEncode(r wire.Response) Frame {
	f, err := EncodeFrame(r)
	if err != nil {
		panic(err)
	}
	return f
}

// gateReasons close the connection after their 3001 (or 2002) frame; every
// other reason answers one request and keeps the connection open. The list
// is public API (docs/protocol.md, "Errors and disconnects").
// too_many_requests is not one: a handler's own limit (typing, search,
// reports, a repeat offender's sends) refuses that request only, as the
// per-user request limit does.
var gateReasons = map[wire.Reason]bool{
	wire.ReasonUnauthorized:   true,
	wire.ReasonTokenExpired:   true,
	wire.ReasonSessionInvalid: true,
	wire.ReasonKicked:         true,
}

// IsGateReason reports whether r closes the connection (unauthorized,
// token_expired, session_invalid, kicked).
func IsGateReason(r wire.Reason) bool { return gateReasons[r] }

// WebSocket close codes the server sends (RFC 6455 §7.4.1); the close
// frame's text is the reason string.
const (
	// CloseNormal answers a client's close.
	CloseNormal = 1000
	// CloseGoingAway is kept for clients that know it; the server now sends
	// CloseServiceRestart on shutdown.
	CloseGoingAway = 1001
	// ClosePolicyViolation follows a gate error (3001 or 2002 frame).
	ClosePolicyViolation = 1008
	// CloseMessageTooBig follows body_too_long for a frame over ws.read_limit.
	CloseMessageTooBig = 1009
	// CloseServiceRestart is sent to every connection on shutdown (SIGTERM):
	// the client reconnects at once, with jitter, and a load balancer sends
	// it to another instance (docs/cluster.md).
	CloseServiceRestart = 1012
)

// errorData is e's data object with the failed request's client_msg_id.
func errorData(e *wire.Error, clientMsgID string) wire.ErrorData {
	d := e.Data()
	d.ClientMsgID = clientMsgID
	return d
}
