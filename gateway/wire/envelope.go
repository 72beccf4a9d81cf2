package wire

// Envelope is every HTTP response body: err_code 0 and data on success; on
// failure err_code from the error table, err_msg the reason string, and data
// {"reason", "detail"}.
type Envelope struct {
	ErrCode int    `json:"err_code"`
	ErrMsg  string `json:"err_msg"`
	Data    any    `json:"data"`
}

// ErrorData is the data of an error envelope or error frame.
type ErrorData struct {
	Reason      Reason `json:"reason"`
	Detail      string `json:"detail,omitempty"`
	ClientMsgID string `json:"client_msg_id,omitempty"`
}

// OK wraps data in a success envelope.
func OK(data any) Envelope { return Envelope{Data: data} }

// Fail wraps a wire error in an envelope.
func Fail(e *Error) Envelope {
	return Envelope{ErrCode: e.ErrCode, ErrMsg: string(e.Reason), Data: ErrorData{Reason: e.Reason, Detail: e.Detail}}
}
