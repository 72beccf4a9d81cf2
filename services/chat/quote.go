package chat

import (
	"context"
	"fmt"
	"unicode/utf8"

	"github.com/nexo-im/nexo/domain"
)

// QuotePreviewRunes caps the text a quote's preview keeps.
const QuotePreviewRunes = 100

// Quotes takes the snapshot a quoted reply carries (Puller.Quote).
type Quotes interface {
	Quote(ctx context.Context, userID, conversationID string, seq int64) (domain.Quote, error)
}

// Quote returns the snapshot {seq, sender_id, msg_type, preview} of the
// message at seq of conversationID as userID sees it now — through a pull,
// so the caller's visibility and its own deletes apply. Errors:
// domain.ErrQuoteUnavailable when the seq holds no readable user message
// for the caller (never sent, outside its visibility, recalled, deleted,
// not saved yet, a notification); the pull's own errors
// (not_conversation_member, ...).
func (p *Puller) Quote(ctx context.Context, userID, conversationID string, seq int64) (domain.Quote, error) {
	res, err := p.PullBySeqs(ctx, userID, conversationID, []int64{seq})
	if err != nil {
		return domain.Quote{}, err
	}
	if len(res.Messages) != 1 || res.Messages[0].Status != string(domain.StatusNormal) ||
		!domain.MsgType(res.Messages[0].MsgType).UserSendable() {
		return domain.Quote{}, domain.NewError(domain.ErrQuoteUnavailable,
			fmt.Sprintf("seq %d of %s holds no message you can quote", seq, conversationID))
	}
	m := &res.Messages[0]
	return domain.Quote{Seq: m.Seq, SenderID: m.SenderID, MsgType: domain.MsgType(m.MsgType), Preview: preview(m)}, nil
}

// preview is a quote's preview of m: the start of its text, or the kind
// of its content.
func preview(m *MessageJSON) string {
	if m.Content == nil {
		return ""
	}
	switch domain.MsgType(m.MsgType) {
	case domain.MsgText, domain.MsgAtText:
		return truncateRunes(m.Content.Text, QuotePreviewRunes)
	case domain.MsgPicture:
		return "[image]"
	case domain.MsgVoice:
		return "[voice]"
	case domain.MsgVideo:
		return "[video]"
	case domain.MsgFile:
		return "[file]"
	}
	return "[custom]"
}

func truncateRunes(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	i := 0
	for j := range s {
		if i == n {
			return s[:j]
		}
		i++
	}
	return s
}
