package main

import "encoding/json"

// The frame codes and JSON shapes nexo-bench speaks. They are copied from the
// public protocol (docs/protocol.md, docs/pipeline.md) rather than imported,
// so the harness depends on the wire and nothing else: it can measure any
// Nexo deployment, including one built from another revision.
const (
	reqSendMsg      = 1003 // send a message; answered with an ACK
	reqPullMsgRange = 1005 // pull a seq range of one conversation
	reqMsgAck       = 1101 // the client's delivered/read cursor
	pushMsg         = 2001 // a message for a recipient
	pushKick        = 2002 // the session was replaced or revoked
	pushAck         = 2101 // a later ACK (ack_type "saved") for the sender
	pushGroupNotify = 2102 // notify mode: {conversation_id, max_seq}, pull to read
	pushError       = 3001 // an asynchronous error (save_failed)

	sessionSingle = 1
	sessionGroup  = 3
	msgTypeText   = 101

	ackAccepted = "accepted"
	ackSaved    = "saved"

	statusUnavailable = "unavailable"
)

// frame is one WebSocket text frame in either direction. Requests leave
// ErrCode/ErrMsg zero; a response echoes ReqIdentifier and MsgIncr; a push
// carries a 2xxx/3001 identifier. ErrMsg is the reason when ErrCode != 0.
type frame struct {
	ReqIdentifier int             `json:"req_identifier"`
	MsgIncr       string          `json:"msg_incr"`
	OperationID   string          `json:"operation_id"`
	ErrCode       int             `json:"err_code,omitempty"`
	ErrMsg        string          `json:"err_msg,omitempty"`
	Data          json.RawMessage `json:"data,omitempty"`
}

// inFrame is a frame the server sent, decoded in one pass: data is the
// union of every data object nexo-bench reads (an ACK, a message, a
// notify, an error push, a pull result), so no frame is parsed twice.
type inFrame struct {
	ReqIdentifier int    `json:"req_identifier"`
	MsgIncr       string `json:"msg_incr"`
	ErrCode       int    `json:"err_code"`
	ErrMsg        string `json:"err_msg"`
	Data          inData `json:"data"`
	// Ts is the server's time when it encoded the frame (Unix ms; every
	// server frame carries it).
	Ts int64 `json:"ts"`
}

// inData holds the fields of every data object nexo-bench reads; those of
// other shapes stay zero.
type inData struct {
	message            // 2001 pushes; the ACK fields shared with it
	AckType  string    `json:"ack_type"` // 1003 answers, 2101 pushes
	MaxSeq   int64     `json:"max_seq"`  // 2102 notifies, pull results
	MinSeq   int64     `json:"min_seq"`  // pull results
	Messages []message `json:"messages"` // pull results
	Reason   string    `json:"reason"`   // 3001 pushes, error answers
}

// content is a message body; nexo-bench only sends text (msg_type 101).
type content struct {
	Text string `json:"text,omitempty"`
}

// sendData is the data of a 1003 request.
type sendData struct {
	ClientMsgID string  `json:"client_msg_id"`
	SessionType int     `json:"session_type"`
	RecvID      string  `json:"recv_id,omitempty"`
	GroupID     string  `json:"group_id,omitempty"`
	MsgType     int     `json:"msg_type"`
	Content     content `json:"content"`
}

// message is the message object of 2001 pushes and of pulls. A placeholder
// (a seq with no readable message) carries only seq and status
// "unavailable".
type message struct {
	ServerMsgID    string `json:"server_msg_id"`
	ClientMsgID    string `json:"client_msg_id"`
	ConversationID string `json:"conversation_id"`
	Seq            int64  `json:"seq"`
	SenderID       string `json:"sender_id"`
	RecvID         string `json:"recv_id"`
	GroupID        string `json:"group_id"`
	SessionType    int    `json:"session_type"`
	Status         string `json:"status"`
	SendAt         int64  `json:"send_at"`
	// MsgType and Content are read for the mix's checks (--picture-share,
	// --action-share); a text body's fields are skipped by the decoder.
	MsgType int         `json:"msg_type"`
	Content wireContent `json:"content"`
}

// pullData is the data of a 1005 request (and the query of GET /msg/pull).
type pullData struct {
	ConversationID string `json:"conversation_id"`
	BeginSeq       int64  `json:"begin_seq,omitempty"`
	EndSeq         int64  `json:"end_seq,omitempty"`
	Limit          int    `json:"limit,omitempty"`
}

// pullResult answers a pull: messages ascending by seq, every seq of the
// window present, and the caller's visible bounds.
type pullResult struct {
	Messages []message `json:"messages"`
	MinSeq   int64     `json:"min_seq"`
	MaxSeq   int64     `json:"max_seq"`
}

// maxPullLimit is the server's cap on one pull.
const maxPullLimit = 100

// singleConversationID is the public conversation-ID rule for single chat:
// "si_{min}_{max}" with '_' inside an ID written as '.'.
func singleConversationID(a, b string) string {
	if b < a {
		a, b = b, a
	}
	return "si_" + dotted(a) + "_" + dotted(b)
}

// groupConversationID is "sg_{group_id}".
func groupConversationID(groupID string) string { return "sg_" + groupID }

func dotted(id string) string {
	out := []byte(id)
	for i, c := range out {
		if c == '_' {
			out[i] = '.'
		}
	}
	return string(out)
}
