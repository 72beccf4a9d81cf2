package sync

import (
	"github.com/nexo-im/nexo/domain"
	"github.com/nexo-im/nexo/services/chat"
)

// AckRequest is the data of WS 1101: the client holds (delivered) or has
// read (read; "ack_read" is accepted as read) conversation_id up to seq.
type AckRequest struct {
	AckType        string `json:"ack_type"`
	ConversationID string `json:"conversation_id"`
	Seq            int64  `json:"seq"`
}

// Validate implements api.Validator.
func (r *AckRequest) Validate() error {
	switch domain.AckType(r.AckType) {
	case domain.AckDelivered, domain.AckRead:
	case "ack_read":
		r.AckType = string(domain.AckRead)
	default:
		return domain.BadField("ack_type", "must be \"delivered\" or \"read\"")
	}
	return validConvSeq(r.ConversationID, r.Seq)
}

// MarkReadRequest is the body of POST /msg/mark_read.
type MarkReadRequest struct {
	ConversationID string `json:"conversation_id"`
	Seq            int64  `json:"seq"`
}

// Validate implements api.Validator.
func (r *MarkReadRequest) Validate() error { return validConvSeq(r.ConversationID, r.Seq) }

// AckResult answers 1101 and mark_read: the advance was taken (the cursor
// is written within sync.cursor_flush_interval; reads see it at once).
type AckResult struct {
	AckType        string `json:"ack_type"`
	ConversationID string `json:"conversation_id"`
	Seq            int64  `json:"seq"`
}

// NewestSeqRequest is the data of WS 1001 (and GET /msg/newest_seq's
// query); no IDs means every conversation of the caller, a page at a time:
// cursor is the previous page's next_cursor, limit 1–1,000 (default 500).
type NewestSeqRequest struct {
	ConversationIDs []string `json:"conversation_ids"`
	Cursor          string   `json:"cursor"`
	Limit           int      `json:"limit"`
}

// SeqInfo is one conversation's seqs as the caller sees them: max_seq is
// the highest saved seq it may see, min_seq the first, and its cursors.
type SeqInfo struct {
	MaxSeq       int64 `json:"max_seq"`
	MinSeq       int64 `json:"min_seq"`
	ReadSeq      int64 `json:"read_seq"`
	DeliveredSeq int64 `json:"delivered_seq"`
}

// NewestSeqResult answers 1001 and GET /msg/newest_seq, keyed by
// conversation ID; next_cursor is the next page's cursor ("" after the last
// page, and always "" for given conversation IDs).
type NewestSeqResult struct {
	Conversations map[string]SeqInfo `json:"conversations"`
	NextCursor    string             `json:"next_cursor"`
}

// MaxReadRequest is the data of WS 1006.
type MaxReadRequest struct {
	ConversationID string `json:"conversation_id"`
}

// Validate implements api.Validator.
func (r *MaxReadRequest) Validate() error {
	if r.ConversationID == "" {
		return domain.BadField("conversation_id", "is required")
	}
	return nil
}

// MaxReadResult answers 1006.
type MaxReadResult struct {
	ConversationID string `json:"conversation_id"`
	MaxSeq         int64  `json:"max_seq"`
	ReadSeq        int64  `json:"read_seq"`
}

// RevokeRequest is the data of WS 1102 and the body of POST /msg/revoke.
type RevokeRequest struct {
	ConversationID string `json:"conversation_id"`
	Seq            int64  `json:"seq"`
}

// Validate implements api.Validator.
func (r *RevokeRequest) Validate() error { return validConvSeq(r.ConversationID, r.Seq) }

// ConversationJSON is one entry of the conversation list. peer_user_id is
// set for single chat, group_id for groups; latest_msg is null when the
// caller sees no message yet; updated_at is the later of the newest
// message's send_at and the last settings change (Unix ms).
type ConversationJSON struct {
	ConversationID     string            `json:"conversation_id"`
	ConversationType   int               `json:"conversation_type"`
	PeerUserID         string            `json:"peer_user_id,omitempty"`
	GroupID            string            `json:"group_id,omitempty"`
	MaxSeq             int64             `json:"max_seq"`
	ReadSeq            int64             `json:"read_seq"`
	UnreadCount        int64             `json:"unread_count"`
	LatestMsg          *chat.MessageJSON `json:"latest_msg"`
	HasUnreadMention   bool              `json:"has_unread_mention"`
	UnreadMentionCount int64             `json:"unread_mention_count"`
	IsPinned           bool              `json:"is_pinned"`
	RecvMsgOpt         int               `json:"recv_msg_opt"`
	UpdatedAt          int64             `json:"updated_at"`
}

// ListResult answers GET /conversation/list.
type ListResult struct {
	Conversations []ConversationJSON `json:"conversations"`
	Total         int64              `json:"total"`
}

// UpdateRequest is the body of PUT /conversation/update; absent fields
// keep their value.
type UpdateRequest struct {
	ConversationID string `json:"conversation_id"`
	IsPinned       *bool  `json:"is_pinned"`
	RecvMsgOpt     *int   `json:"recv_msg_opt"`
}

// Receive options (recv_msg_opt), as the group fanout reads them.
const (
	RecvNormal        = 0 // push and notify
	RecvNoPush        = 1 // no push (and no offline resend; a 2102 summary instead)
	RecvNoNotify      = 2 // push; the client shows no notification
	maxConversationID = 256
)

// Validate implements api.Validator.
func (r *UpdateRequest) Validate() error {
	if err := validConv(r.ConversationID); err != nil {
		return err
	}
	if r.IsPinned == nil && r.RecvMsgOpt == nil {
		return domain.BadField("body", "needs is_pinned or recv_msg_opt")
	}
	if r.RecvMsgOpt != nil && (*r.RecvMsgOpt < RecvNormal || *r.RecvMsgOpt > RecvNoNotify) {
		return domain.BadField("recv_msg_opt", "must be 0 (normal), 1 (no push) or 2 (push without notification)")
	}
	return nil
}

// DeleteRequest is the body of POST /conversation/delete.
type DeleteRequest struct {
	ConversationID string `json:"conversation_id"`
}

// Validate implements api.Validator.
func (r *DeleteRequest) Validate() error { return validConv(r.ConversationID) }

func validConv(id string) error {
	if id == "" {
		return domain.BadField("conversation_id", "is required")
	}
	if len(id) > maxConversationID {
		return domain.BadField("conversation_id", "must be at most %d bytes", maxConversationID)
	}
	return nil
}

func validConvSeq(id string, seq int64) error {
	if err := validConv(id); err != nil {
		return err
	}
	if seq < 1 {
		return domain.BadField("seq", "must be >= 1")
	}
	return nil
}
