package actions

import (
	"context"
	"fmt"
	"time"
	"unicode/utf8"

	"github.com/nexo-im/nexo/domain"
	"github.com/nexo-im/nexo/services/chat"
)

// maxEditTextBytes is the capacity of messages.content_text (TEXT).
const maxEditTextBytes = 65535

// EditRequest is the body of POST /msg/edit and the data of WS 1106:
// the new content of the caller's text message at (conversation_id, seq).
type EditRequest struct {
	ConversationID string      `json:"conversation_id"`
	Seq            int64       `json:"seq"`
	Content        EditContent `json:"content"`
}

// EditContent is an edit's new content: text only (101 and 106 messages
// are the only ones an edit may change).
type EditContent struct {
	Text string `json:"text"`
}

// Validate implements api.Validator.
func (r *EditRequest) Validate() error {
	if r.ConversationID == "" {
		return domain.BadField("conversation_id", "required")
	}
	if r.Seq < 1 {
		return domain.BadField("seq", "required, >= 1")
	}
	if r.Content.Text == "" {
		return domain.BadField("content.text", "required")
	}
	if !utf8.ValidString(r.Content.Text) {
		return domain.BadField("content.text", "must be valid UTF-8")
	}
	return nil
}

// EditResult answers an edit: the message's content as it now stands.
type EditResult struct {
	ConversationID string           `json:"conversation_id"`
	Seq            int64            `json:"seq"`
	ServerMsgID    string           `json:"server_msg_id"`
	EditVersion    int              `json:"edit_version"`
	EditedAt       int64            `json:"edited_at"`
	Content        chat.ContentJSON `json:"content"`
}

// Edit replaces the text of userID's message at (conversation_id, seq) and
// announces it (1601) to the conversation. Rules: only the sender, only a
// text message (101, 106), within msg.edit_window of its send_at (0: no
// limit), never a recalled or deleted one. Concurrent edits of one message
// get strictly rising edit_version, and the highest is what every pull
// returns. Errors: bad_request, body_too_long, not_conversation_member,
// not_group_member, member_not_active, bad_seq (beyond max_seq),
// message_not_found, edit_not_allowed, edit_timeout, message_gone,
// server_busy (not saved yet: retry).
func (s *Service) Edit(ctx context.Context, userID string, req EditRequest) (EditResult, error) {
	if err := req.Validate(); err != nil {
		return EditResult{}, err
	}
	if n := len(req.Content.Text); n > s.d.Msg.MaxBodyBytes || n > maxEditTextBytes {
		return EditResult{}, domain.NewError(domain.ErrBodyTooLong,
			fmt.Sprintf("content.text is %d bytes; the limit is %d", n, min(s.d.Msg.MaxBodyBytes, maxEditTextBytes)))
	}
	conv, seq := req.ConversationID, req.Seq
	c, err := s.member(ctx, userID, conv)
	if err != nil {
		return EditResult{}, err
	}
	if err := s.checkSeq(ctx, conv, c, seq); err != nil {
		return EditResult{}, err
	}
	if err := s.saved(ctx, conv, []int64{seq}); err != nil {
		return EditResult{}, err
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), announceTimeout)
	defer cancel()
	now := s.now()
	m, err := s.d.Store.Edit(ctx, conv, seq, userID, req.Content.Text, now.UnixMilli(), func(m *domain.Message) error {
		return s.mayEdit(userID, m, now)
	})
	if err != nil {
		return EditResult{}, err
	}
	content := chat.ContentJSON{Text: m.Content.Text}
	notice := EditNoticeJSON{ConversationID: conv, Seq: seq, ServerMsgID: m.ServerMsgID, EditorID: userID,
		EditVersion: m.EditVersion, EditedAt: m.EditedAt, Content: content}
	id := fmt.Sprintf("%sedit:%s:%d", domain.SystemClientMsgIDPrefix, m.ServerMsgID, m.EditVersion)
	if err := s.announce(ctx, userID, conv, MsgEditNotification, notice, id); err != nil {
		return EditResult{}, err
	}
	return EditResult{ConversationID: conv, Seq: seq, ServerMsgID: m.ServerMsgID, EditVersion: m.EditVersion,
		EditedAt: m.EditedAt, Content: content}, nil
}

// mayEdit applies the edit rules to the locked message.
func (s *Service) mayEdit(userID string, m *domain.Message, now time.Time) error {
	if err := gone(m); err != nil {
		return err
	}
	switch {
	case m.SenderID != userID:
		return domain.NewError(domain.ErrEditNotAllowed, "only its sender may edit a message")
	case m.MsgType != domain.MsgText && m.MsgType != domain.MsgAtText:
		return domain.NewError(domain.ErrEditNotAllowed, fmt.Sprintf("msg_type %d cannot be edited; only text (101, 106)", m.MsgType))
	case s.d.Msg.EditWindow > 0 && now.Sub(time.UnixMilli(m.SendAt)) > s.d.Msg.EditWindow:
		return domain.NewError(domain.ErrEditTimeout, fmt.Sprintf("sent more than %s ago", s.d.Msg.EditWindow))
	}
	return nil
}

// EditsRequest is the query of GET /msg/edits and the data of WS 1107.
type EditsRequest struct {
	ConversationID string `json:"conversation_id" query:"conversation_id"`
	Seq            int64  `json:"seq" query:"seq"`
}

// Validate implements api.Validator.
func (r *EditsRequest) Validate() error {
	if r.ConversationID == "" {
		return domain.BadField("conversation_id", "required")
	}
	if r.Seq < 1 {
		return domain.BadField("seq", "required, >= 1")
	}
	return nil
}

// EditVersionJSON is one earlier version of an edited message.
type EditVersionJSON struct {
	EditVersion int              `json:"edit_version"`
	Content     chat.ContentJSON `json:"content"`
	EditedAt    int64            `json:"edited_at"` // when it was written: send_at for version 0
}

// EditsResult lists a message's earlier versions, oldest first; the
// current one is what pulls return.
type EditsResult struct {
	ConversationID string            `json:"conversation_id"`
	Seq            int64             `json:"seq"`
	Versions       []EditVersionJSON `json:"versions"`
}

// Edits lists the earlier versions of the message at (conversation_id,
// seq) to a member who may see it (a member who left, up to its last
// visible seq). A recalled or deleted message has none. Errors:
// bad_request, not_conversation_member, bad_seq, message_not_found.
func (s *Service) Edits(ctx context.Context, userID string, req EditsRequest) (EditsResult, error) {
	if err := req.Validate(); err != nil {
		return EditsResult{}, err
	}
	b, err := s.d.Access.Member(ctx, userID, req.ConversationID)
	if err != nil {
		return EditsResult{}, err
	}
	if err := s.checkSeq(ctx, req.ConversationID, caller{bounds: b}, req.Seq); err != nil {
		return EditsResult{}, err
	}
	res := EditsResult{ConversationID: req.ConversationID, Seq: req.Seq, Versions: []EditVersionJSON{}}
	msgs, err := s.d.Messages.BySeqs(ctx, req.ConversationID, []int64{req.Seq})
	if err != nil {
		return EditsResult{}, err
	}
	if len(msgs) == 0 || msgs[0].Status != domain.StatusNormal {
		return res, nil
	}
	hidden, err := s.d.Store.Hidden(ctx, userID, req.ConversationID, []int64{req.Seq})
	if err != nil || hidden[req.Seq] {
		return res, err
	}
	versions, err := s.d.Store.Edits(ctx, req.ConversationID, req.Seq)
	if err != nil {
		return EditsResult{}, err
	}
	for _, v := range versions {
		res.Versions = append(res.Versions, EditVersionJSON{EditVersion: v.Version, Content: chat.ContentJSON{Text: v.Text}, EditedAt: v.EditedAt})
	}
	return res, nil
}
