package domain

import "strings"

// MsgType is a message's content type, with OpenIM's numbers.
type MsgType int

// Content types (OpenIM's numbers) and Nexo's notification types (1500+).
const (
	MsgText    MsgType = 101
	MsgPicture MsgType = 102
	MsgVoice   MsgType = 103
	MsgVideo   MsgType = 104
	MsgFile    MsgType = 105
	MsgAtText  MsgType = 106
	MsgCustom  MsgType = 110

	// MsgNotificationMin is the first notification type; group and revoke
	// notifications (see docs/groups.md) are numbered from here.
	MsgNotificationMin MsgType = 1500
)

// UserSendable reports whether a client may send this type (notifications
// are the server's own).
func (t MsgType) UserSendable() bool {
	switch t {
	case MsgText, MsgPicture, MsgVoice, MsgVideo, MsgFile, MsgAtText, MsgCustom:
		return true
	}
	return false
}

// MessageStatus is the state of a stored message.
type MessageStatus string

const (
	// StatusNormal: a readable message.
	StatusNormal MessageStatus = "normal"
	// StatusRevoked: recalled; its content is no longer served.
	StatusRevoked MessageStatus = "revoked"
	// StatusFailed: a placeholder for a seq whose message could not be saved
	// (it went to the dead-letter stream); see docs/pipeline.md.
	StatusFailed MessageStatus = "failed"
	// StatusDeleted: removed for everyone by its sender or a group admin;
	// a tombstone that keeps its metadata, never its content.
	StatusDeleted MessageStatus = "deleted"
	// StatusUnavailable is never stored: pulls use it for a seq that has no
	// readable message (a gap, a failed placeholder, or outside the caller's
	// visibility), so clients can advance past it.
	StatusUnavailable MessageStatus = "unavailable"
)

// Content is a message body. Exactly the field that fits MsgType is set;
// Image, Video, Audio and File hold URLs or client-defined references, and
// Custom holds a JSON document as text.
type Content struct {
	Text   string
	Image  string
	Video  string
	Audio  string
	File   string
	Custom string
}

// Size is the number of bytes the content occupies, for the body limit.
func (c Content) Size() int {
	return len(c.Text) + len(c.Image) + len(c.Video) + len(c.Audio) + len(c.File) + len(c.Custom)
}

// Empty reports whether no content field is set.
func (c Content) Empty() bool { return c.Size() == 0 }

// Message is one message of a conversation. Seq is its position in the
// conversation (strictly increasing, never reused); ServerMsgID is globally
// unique and sortable by time; SendAt is Unix milliseconds taken at accept.
type Message struct {
	ServerMsgID    string
	ClientMsgID    string
	ConversationID string
	Seq            int64
	SenderID       string
	RecvID         string // single chat: the receiver; "" for groups
	GroupID        string // group chat: the group; "" for single chat
	SessionType    SessionType
	MsgType        MsgType
	Content        Content
	AtUserIDs      []string
	Status         MessageStatus
	SendAt         int64
	// Quote is the snapshot of the message this one replies to, taken at
	// accept (nil: no quote); docs/actions.md.
	Quote *Quote
	// EditedAt (Unix ms) and EditVersion (1, 2, ...) are set once the
	// sender edited the message; 0 when never edited.
	EditedAt    int64
	EditVersion int
}

// SingleRecipients is who a single-chat message is pushed to: the receiver
// and the sender's other devices (once, for a note to self).
func (m *Message) SingleRecipients() []string {
	if m.SenderID == m.RecvID {
		return []string{m.SenderID}
	}
	return []string{m.RecvID, m.SenderID}
}

// SystemClientMsgIDPrefix starts the client_msg_id of every message the
// server sends itself (group notifications "sys:<server_msg_id>", recall
// notices "sys:revoke:<server_msg_id>"). Clients may not use it, in any
// letter case (a case-insensitive collation would make "SYS:" collide):
// otherwise a sender could take a notice's idempotency key first and
// suppress the notice.
const SystemClientMsgIDPrefix = "sys:"

// IsReservedClientMsgID reports whether id is in the server's namespace.
func IsReservedClientMsgID(id string) bool {
	return len(id) >= len(SystemClientMsgIDPrefix) && strings.EqualFold(id[:len(SystemClientMsgIDPrefix)], SystemClientMsgIDPrefix)
}

// ClientMsgKey is a message's idempotency key: client_msg_id is unique
// per sender (uk_sender_client_msg).
type ClientMsgKey struct {
	SenderID    string
	ClientMsgID string
}
