// Package chat is the message service behind WS 1003/1005/1002 and
// /msg/send, /msg/pull, /msg/pull_by_seqs (gateway/routes/chat.go): it
// validates a send, checks the sender may send to the conversation and
// mention whom it names, runs the accept step (two-phase) or the
// synchronous path, answers the ACK, and serves pulls. Its Pusher makes
// the pipeline's pushes (workers.Pusher). docs/pipeline.md and
// docs/protocol.md describe it.
package chat

import (
	"bytes"
	"encoding/json"
	"fmt"
	"unicode/utf8"

	"github.com/nexo-im/nexo/domain"
)

// ContentJSON is a message body on the wire: the field matching msg_type is
// set (text for 101/106, image 102, audio 103, video 104, file 105, custom
// 110 — any JSON value).
type ContentJSON struct {
	Text   string          `json:"text,omitempty"`
	Image  MediaRef        `json:"image,omitempty"`
	Video  MediaRef        `json:"video,omitempty"`
	Audio  MediaRef        `json:"audio,omitempty"`
	File   MediaRef        `json:"file,omitempty"`
	Custom json.RawMessage `json:"custom,omitempty"`
}

// MessageJSON is the message object of pushes (2001) and pulls, the same in
// both. A placeholder for a seq with no readable message carries only seq
// and status "unavailable"; a revoked message keeps its metadata and loses
// its content.
type MessageJSON struct {
	ServerMsgID    string       `json:"server_msg_id,omitempty"`
	ClientMsgID    string       `json:"client_msg_id,omitempty"`
	ConversationID string       `json:"conversation_id,omitempty"`
	Seq            int64        `json:"seq"`
	SenderID       string       `json:"sender_id,omitempty"`
	RecvID         string       `json:"recv_id,omitempty"`
	GroupID        string       `json:"group_id,omitempty"`
	SessionType    int          `json:"session_type,omitempty"`
	MsgType        int          `json:"msg_type,omitempty"`
	Content        *ContentJSON `json:"content,omitempty"`
	AtUserIDs      []string     `json:"at_user_ids,omitempty"`
	Status         string       `json:"status"`
	SendAt         int64        `json:"send_at,omitempty"`
	// Quote is a quoted reply's snapshot (docs/actions.md).
	Quote *QuoteJSON `json:"quote,omitempty"`
	// EditedAt (Unix ms) and EditVersion are set once the message was
	// edited.
	EditedAt    int64 `json:"edited_at,omitempty"`
	EditVersion int   `json:"edit_version,omitempty"`
	// Reactions are set by pulls only: [{emoji, count, me}], me for the
	// caller.
	Reactions []ReactionJSON `json:"reactions,omitempty"`
}

// QuoteJSON is the snapshot a quoted reply carries: the quoted message's
// seq, sender, msg_type and a preview of its content (at most
// QuotePreviewRunes characters of text, or "[image]" and the like). Status
// is "unavailable", with no sender, type or preview, once the quoted
// message was recalled or deleted (or the reader deleted it for itself).
type QuoteJSON struct {
	Seq      int64  `json:"seq"`
	SenderID string `json:"sender_id,omitempty"`
	MsgType  int    `json:"msg_type,omitempty"`
	Preview  string `json:"preview,omitempty"`
	Status   string `json:"status"`
}

// ReactionJSON is one emoji's reactions on a message.
type ReactionJSON struct {
	Emoji string `json:"emoji"`
	Count int    `json:"count"`
	Me    bool   `json:"me"`
}

// quoteJSON renders q.
func quoteJSON(q *domain.Quote) *QuoteJSON {
	if q == nil {
		return nil
	}
	if q.Unavailable {
		return &QuoteJSON{Seq: q.Seq, Status: string(domain.StatusUnavailable)}
	}
	return &QuoteJSON{Seq: q.Seq, SenderID: q.SenderID, MsgType: int(q.MsgType), Preview: q.Preview, Status: string(domain.StatusNormal)}
}

// ToJSON renders m for the wire.
func ToJSON(m *domain.Message) MessageJSON {
	out := MessageJSON{
		ServerMsgID: m.ServerMsgID, ClientMsgID: m.ClientMsgID, ConversationID: m.ConversationID, Seq: m.Seq,
		SenderID: m.SenderID, RecvID: m.RecvID, GroupID: m.GroupID, SessionType: int(m.SessionType),
		MsgType: int(m.MsgType), AtUserIDs: m.AtUserIDs, Status: string(m.Status), SendAt: m.SendAt,
	}
	switch m.Status {
	case domain.StatusNormal, "":
		out.Status = string(domain.StatusNormal)
		c := m.Content
		out.Content = &ContentJSON{Text: c.Text, Image: MediaRef(c.Image), Video: MediaRef(c.Video), Audio: MediaRef(c.Audio), File: MediaRef(c.File)}
		if c.Custom != "" {
			out.Content.Custom = json.RawMessage(c.Custom)
		}
		out.Quote = quoteJSON(m.Quote)
		out.EditedAt, out.EditVersion = m.EditedAt, m.EditVersion
	case domain.StatusFailed:
		return Placeholder(m.Seq)
	}
	return out
}

// Placeholder is the entry for a seq with no readable message.
func Placeholder(seq int64) MessageJSON {
	return MessageJSON{Seq: seq, Status: string(domain.StatusUnavailable)}
}

// SendRequest is the data of WS 1003 and the body of POST /msg/send.
type SendRequest struct {
	ClientMsgID string      `json:"client_msg_id"`
	SessionType int         `json:"session_type"`
	RecvID      string      `json:"recv_id"`
	GroupID     string      `json:"group_id"`
	MsgType     int         `json:"msg_type"`
	Content     ContentJSON `json:"content"`
	AtUserIDs   []string    `json:"at_user_ids"`
	// Quote makes the message a reply to the message at quote.seq of the
	// same conversation (docs/actions.md).
	Quote *QuoteRequest `json:"quote"`
}

// QuoteRequest names the message a reply quotes.
type QuoteRequest struct {
	Seq int64 `json:"seq"`
}

// AckJSON answers a send: ack_type "accepted" (two-phase: appended to the
// stream, saved later) or "saved" (in the database).
type AckJSON struct {
	AckType        string `json:"ack_type"`
	ServerMsgID    string `json:"server_msg_id"`
	ClientMsgID    string `json:"client_msg_id"`
	ConversationID string `json:"conversation_id"`
	Seq            int64  `json:"seq"`
	SendAt         int64  `json:"send_at"`
}

// Limits beyond msg.max_body_bytes.
const (
	maxClientMsgIDLen = 64  // messages.client_msg_id is VARCHAR(64): characters
	maxRefLen         = 512 // image/video/audio/file references: VARCHAR(512)
	maxAtUsers        = 100
	// AtAll in at_user_ids mentions everyone (owners and admins only).
	AtAll = "all"
)

// validate checks a send before anything is looked up or allocated and
// returns the domain message (no IDs, seq or time yet). maxBody is
// msg.max_body_bytes.
func (r *SendRequest) validate(sender string, maxBody int) (domain.Message, error) {
	var m domain.Message
	if err := domain.CheckLen("client_msg_id", r.ClientMsgID, 1, maxClientMsgIDLen); err != nil {
		return m, err
	}
	if hasControl(r.ClientMsgID) {
		return m, domain.BadField("client_msg_id", "must be printable characters (no control characters)")
	}
	if domain.IsReservedClientMsgID(r.ClientMsgID) {
		return m, domain.BadField("client_msg_id", "the prefix %q is reserved for the server's own messages", domain.SystemClientMsgIDPrefix)
	}
	st := domain.SessionType(r.SessionType)
	switch st {
	case domain.SessionSingle:
		if !domain.ValidID(r.RecvID) {
			return m, domain.BadField("recv_id", "required for session_type 1: 1-64 of [A-Za-z0-9_-]")
		}
		if r.GroupID != "" {
			return m, domain.BadField("group_id", "must be empty for session_type 1")
		}
		m.RecvID, m.ConversationID = r.RecvID, domain.SingleConversationID(sender, r.RecvID)
	case domain.SessionGroup:
		if !domain.ValidID(r.GroupID) {
			return m, domain.BadField("group_id", "required for session_type 3: 1-64 of [A-Za-z0-9_-]")
		}
		if r.RecvID != "" {
			return m, domain.BadField("recv_id", "must be empty for session_type 3")
		}
		m.GroupID, m.ConversationID = r.GroupID, domain.GroupConversationID(r.GroupID)
	default:
		return m, domain.BadField("session_type", "must be 1 (single chat) or 3 (group chat)")
	}
	mt := domain.MsgType(r.MsgType)
	if !mt.UserSendable() {
		return m, domain.BadField("msg_type", "must be one of 101, 102, 103, 104, 105, 106, 110")
	}
	c := r.Content
	content := domain.Content{Text: c.Text, Image: string(c.Image), Video: string(c.Video), Audio: string(c.Audio), File: string(c.File)}
	if len(c.Custom) > 0 {
		if !json.Valid(c.Custom) {
			return m, domain.BadField("content.custom", "must be valid JSON")
		}
		if why := checkStorableJSON(c.Custom); why != "" {
			return m, domain.BadField("content.custom", "%s", why)
		}
		var buf bytes.Buffer
		if err := json.Compact(&buf, c.Custom); err == nil {
			content.Custom = buf.String()
		}
	}
	if content.Size() > maxBody {
		return m, domain.NewError(domain.ErrBodyTooLong, fmt.Sprintf("content is %d bytes; the limit is %d", content.Size(), maxBody))
	}
	if len(c.Text) > maxTextBytes {
		return m, domain.NewError(domain.ErrBodyTooLong, fmt.Sprintf("content.text is %d bytes; the limit is %d", len(c.Text), maxTextBytes))
	}
	for _, ref := range []struct{ name, v string }{{"image", content.Image}, {"video", content.Video}, {"audio", content.Audio}, {"file", content.File}} {
		if len(ref.v) > maxRefLen {
			return m, domain.NewError(domain.ErrBodyTooLong, fmt.Sprintf("content.%s is %d bytes; the limit is %d", ref.name, len(ref.v), maxRefLen))
		}
	}
	if field, ok := requiredContent(mt, content); !ok {
		return m, domain.BadField("content."+field, "required for msg_type %d", mt)
	}
	if !utf8.ValidString(content.Text) {
		return m, domain.BadField("content.text", "must be valid UTF-8")
	}
	if len(r.AtUserIDs) > maxAtUsers {
		return m, domain.BadField("at_user_ids", "at most %d entries", maxAtUsers)
	}
	for _, u := range r.AtUserIDs {
		if u != AtAll && !domain.ValidID(u) {
			return m, domain.BadField("at_user_ids", "%q is not a user ID or %q", u, AtAll)
		}
	}
	if r.Quote != nil && r.Quote.Seq < 1 {
		return m, domain.BadField("quote.seq", "must be a seq of the conversation (>= 1)")
	}
	m.ClientMsgID, m.SenderID, m.SessionType, m.MsgType = r.ClientMsgID, sender, st, mt
	m.Content, m.AtUserIDs, m.Status = content, r.AtUserIDs, domain.StatusNormal
	return m, nil
}

// checkContent checks a content that before_send replaced: size and the
// msg_type's required field.
func checkContent(m *domain.Message, maxBody int) error {
	if m.Content.Size() > maxBody {
		return domain.NewError(domain.ErrBodyTooLong, fmt.Sprintf("content (as before_send replaced it) is %d bytes; the limit is %d", m.Content.Size(), maxBody))
	}
	if field, ok := requiredContent(m.MsgType, m.Content); !ok {
		return domain.NewError(domain.ErrMessageRejected, fmt.Sprintf("before_send replaced the content without content.%s, required for msg_type %d", field, m.MsgType))
	}
	return nil
}

func requiredContent(t domain.MsgType, c domain.Content) (string, bool) {
	switch t {
	case domain.MsgText, domain.MsgAtText:
		return "text", c.Text != ""
	case domain.MsgPicture:
		return "image", c.Image != ""
	case domain.MsgVoice:
		return "audio", c.Audio != ""
	case domain.MsgVideo:
		return "video", c.Video != ""
	case domain.MsgFile:
		return "file", c.File != ""
	case domain.MsgCustom:
		return "custom", c.Custom != ""
	}
	return "", false
}

func hasControl(s string) bool {
	for _, r := range s {
		if r < 0x20 || r == 0x7f {
			return true
		}
	}
	return false
}
