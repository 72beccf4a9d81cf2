package wire

import "time"

// Envelope is every HTTP response body: err_code 0 and data on success; on
// failure err_code from the error table, err_msg the reason string, and data
// {"reason", "detail"}.
type Envelope struct {
	ErrCode int    `json:"err_code"`
	ErrMsg  string `json:"err_msg"`
	Data    any    `json:"data"`
}

// ErrorData is the data of an error envelope or error frame. RetryAfterMs
// (too_many_requests) is how long to wait before retrying, in
// milliseconds; RequestID names the server log line of a server-side
// failure (and, over HTTP, of every error: it equals X-Request-Id).
type ErrorData struct {
	Reason       Reason `json:"reason"`
	Detail       string `json:"detail,omitempty"`
	ClientMsgID  string `json:"client_msg_id,omitempty"`
	RetryAfterMs int64  `json:"retry_after_ms,omitempty"`
	RequestID    string `json:"request_id,omitempty"`
}

// OK wraps data in a success envelope.
func OK(data any) Envelope { return Envelope{Data: data} }

// Fail wraps a wire error in an envelope.
func Fail(e *Error) Envelope {
	return Envelope{ErrCode: e.ErrCode, ErrMsg: string(e.Reason), Data: e.Data()}
}

// Data is the error's data object, shared by the HTTP envelope and WebSocket
// error frames.
func (e *Error) Data() ErrorData {
	d := ErrorData{Reason: e.Reason, Detail: e.Detail, RequestID: e.RequestID}
	if e.RetryAfter > 0 {
		// Rounded up: a client that waits exactly this long is allowed.
		d.RetryAfterMs = (e.RetryAfter + time.Millisecond - 1).Milliseconds()
	}
	return d
}
