package domain

// PushKind is what a server push carries. The gateway gives each kind its
// frame identifier (docs/protocol.md); services name only the kind.
type PushKind int

// Push kinds.
const (
	// PushMessage carries a message (2001).
	PushMessage PushKind = iota + 1
	// PushAck carries an ACK of the sender's message or a receipt (2101).
	PushAck
	// PushGroupNotify tells a member that a group conversation has a new
	// seq without the message itself (2102).
	PushGroupNotify
	// PushTyping carries a typing indicator (2103).
	PushTyping
	// PushError carries an asynchronous failure of an earlier request
	// (3001): Err decides its reason and err_code.
	PushError
	// PushReadCount tells a group message's sender how many members have
	// read its messages (2104), coalesced (docs/sync.md, "Read counts").
	PushReadCount
)

// Push is one server-to-client push as the services see it. Data is its
// payload, encodable as JSON with snake_case names; Msg names the message
// it carries or announces (the delivery audit writes one line per
// connection for a tagged push); Err is set only for PushError. The gateway
// encodes a Push once per call, however many connections receive it.
type Push struct {
	Kind PushKind
	Data any
	Msg  *MsgRef
	Err  error
}

// MsgRef names a message: its server_msg_id and its place in its
// conversation.
type MsgRef struct {
	ServerMsgID    string
	ConversationID string
	Seq            int64
}

// RefOf returns m's MsgRef.
func RefOf(m *Message) MsgRef {
	return MsgRef{ServerMsgID: m.ServerMsgID, ConversationID: m.ConversationID, Seq: m.Seq}
}
