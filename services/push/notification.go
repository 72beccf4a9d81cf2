package push

import (
	"context"
	"unicode/utf8"

	"github.com/nexo-im/nexo/domain"
	"github.com/nexo-im/nexo/store"
)

// Notification kinds.
const (
	// KindMessage shows a notification for a new message.
	KindMessage = "message"
	// KindRecall is a silent update: the message named was recalled and
	// an app should withdraw what it showed for it (APNs
	// content-available, an FCM data message, a Web Push the service
	// worker handles without showing anything new).
	KindRecall = "recall"
)

// Notification is what one recipient's devices are told, whatever the
// provider: the providers map it to their own payloads.
type Notification struct {
	Kind           string `json:"kind"`
	UserID         string `json:"user_id"`
	ConversationID string `json:"conversation_id"`
	SessionType    int    `json:"session_type"`
	GroupID        string `json:"group_id,omitempty"`
	ServerMsgID    string `json:"server_msg_id"`
	Seq            int64  `json:"seq"`
	SendAt         int64  `json:"send_at"`
	MsgType        int    `json:"msg_type,omitempty"`
	SenderID       string `json:"sender_id,omitempty"`
	// Title and Body are the visible text per push.preview: text (title
	// the sender's name, body the message's start), sender_only (title
	// the sender's name, body "New message"), none (title "New message",
	// no body, no sender).
	Title string `json:"title,omitempty"`
	Body  string `json:"body,omitempty"`
	// Badge is the recipient's total unread count.
	Badge     int64 `json:"badge"`
	Mentioned bool  `json:"mentioned,omitempty"`
	// SavedAt is when the message was saved (Unix ms), for the latency
	// metric.
	SavedAt int64 `json:"saved_at"`
}

// genericTitle is shown when the preview hides the sender.
const genericTitle = "New message"

// render fills Title and Body of n for m per mode (push.preview) cut to
// chars characters.
func render(n *Notification, m *savedMsg, sender, mode string, chars int) {
	switch mode {
	case "none":
		n.Title = genericTitle
		n.SenderID = ""
		return
	case "sender_only":
		n.Title, n.Body = sender, genericTitle
		return
	}
	n.Title, n.Body = sender, previewOf(m, chars)
}

// previewOf is the start of m's text, or a placeholder for media.
func previewOf(m *savedMsg, chars int) string {
	switch domain.MsgType(m.MsgType) {
	case domain.MsgPicture:
		return "[image]"
	case domain.MsgVoice:
		return "[voice]"
	case domain.MsgVideo:
		return "[video]"
	case domain.MsgFile:
		return "[file]"
	}
	t := m.Text
	if t == "" {
		return "[message]"
	}
	if utf8.RuneCountInString(t) <= chars {
		return t
	}
	return string([]rune(t)[:chars]) + "…"
}

// ConversationReader reads a user's conversations and unread counts
// (store.ConversationRepo).
type ConversationReader interface {
	States(ctx context.Context, ownerID string, conversationIDs []string) ([]store.ConversationState, error)
	StatesPage(ctx context.Context, ownerID, afterID string, limit int) ([]store.ConversationState, error)
	UnreadCounts(ctx context.Context, userID string, ranges []store.SeqRange) (map[string]int64, error)
}

// badgePage is how many conversations one badge query reads.
const badgePage = 500

// TotalUnread is userID's badge: the unread messages of every
// conversation, counted as the conversation list counts them (readable
// messages from others above the read seq and the delete mark).
func TotalUnread(ctx context.Context, convs ConversationReader, userID string) (int64, error) {
	var total int64
	after := ""
	for {
		page, err := convs.StatesPage(ctx, userID, after, badgePage)
		if err != nil {
			return 0, err
		}
		var ranges []store.SeqRange
		for _, st := range page {
			from := max(st.Cursor.ReadSeq, st.HiddenSeq, st.VisibleMin()-1)
			if upto := st.VisibleMax(); upto > from {
				ranges = append(ranges, store.SeqRange{ConversationID: st.ConversationID, After: from, Upto: upto})
			}
		}
		if len(ranges) > 0 {
			counts, err := convs.UnreadCounts(ctx, userID, ranges)
			if err != nil {
				return 0, err
			}
			for _, n := range counts {
				total += n
			}
		}
		if len(page) < badgePage {
			return total, nil
		}
		after = page[len(page)-1].ConversationID
	}
}
