package wire

import "encoding/json"

// Request identifiers, client -> server. 1001–1006 follow OpenIM; 11xx are Nexo's.
const (
	ReqGetNewestSeq      = 1001
	ReqPullBySeqList     = 1002
	ReqSendMsg           = 1003
	ReqPullMsgRange      = 1005
	ReqGetConvMaxReadSeq = 1006
	ReqMsgAck            = 1101
	ReqRevokeMsg         = 1102
	// ReqTyping: {conversation_id, typing}, the caller is (not) typing.
	ReqTyping = 1103
	// ReqAppState: {background}, the client went to the background (or
	// came back); offline push then treats this connection as absent.
	ReqAppState = 1104
	// ReqSearchMsg: the body of POST /msg/search; the answer is its data
	// (docs/search.md).
	ReqSearchMsg = 1105
	// Message actions (docs/actions.md): the bodies of POST /msg/edit,
	// GET /msg/edits, POST /msg/delete, POST /msg/reaction and GET
	// /msg/read_by; the answer is their data.
	ReqEditMsg   = 1106
	ReqMsgEdits  = 1107
	ReqDeleteMsg = 1108
	ReqReactMsg  = 1109
	ReqMsgReadBy = 1110
	// ReqReportMsg: the body of POST /msg/report; the answer is its data
	// (docs/moderation.md, "Reports").
	ReqReportMsg = 1113
	// ReqClearConversation: the body of POST /conversation/clear
	// (docs/privacy.md).
	ReqClearConversation = 1116
	// ReqSetRetention: the body of POST /conversation/set_retention
	// (docs/privacy.md).
	ReqSetRetention = 1117
)

// Push identifiers, server -> client.
const (
	PushMsg         = 2001
	PushKick        = 2002
	PushAck         = 2101
	PushGroupNotify = 2102
	PushTyping      = 2103
	// PushReadCount: {conversation_id, counts: [{seq, read_count,
	// member_count}]}, a group sender's coalesced read counts.
	PushReadCount = 2104
	PushError     = 3001
)

// Request is a client frame. Data is a JSON object whose shape depends on
// ReqIdentifier (docs/protocol.md).
type Request struct {
	ReqIdentifier int             `json:"req_identifier"`
	MsgIncr       string          `json:"msg_incr"`
	OperationID   string          `json:"operation_id"`
	Data          json.RawMessage `json:"data"`
}

// Response is a server frame: a response echoes the request's
// req_identifier, msg_incr and operation_id; a push carries a 2xxx/3001
// identifier. ErrMsg is the reason string when ErrCode is not 0. Ts is the
// server time the frame was encoded, in Unix milliseconds; every frame
// carries it (the encoder fills it when zero).
type Response struct {
	ReqIdentifier int    `json:"req_identifier"`
	MsgIncr       string `json:"msg_incr"`
	OperationID   string `json:"operation_id"`
	ErrCode       int    `json:"err_code"`
	ErrMsg        string `json:"err_msg"`
	Data          any    `json:"data"`
	Ts            int64  `json:"ts"`
}

// Ack types of 2101 pushes and 1101 requests.
const (
	AckAccepted  = "accepted"
	AckSaved     = "saved"
	AckDelivered = "delivered"
	AckRead      = "read"
	AckRevoked   = "revoked"
)
