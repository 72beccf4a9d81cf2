package privacy

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"time"

	"github.com/nexo-im/nexo/domain"
	"github.com/nexo-im/nexo/services/chat"
	"github.com/nexo-im/nexo/services/group"
)

// exportPage is how many messages one read of an export fetches: the
// export holds at most one page in memory, whatever the history's size.
const exportPage = 500

// ExportProfile is the profile part of an export.
type ExportProfile struct {
	UserID       string              `json:"user_id"`
	Nickname     string              `json:"nickname"`
	Avatar       string              `json:"avatar"`
	CreatedAt    int64               `json:"created_at"`
	UpdatedAt    int64               `json:"updated_at"`
	Disabled     bool                `json:"disabled"`
	GroupInvites domain.GroupInvites `json:"group_invites"`
	DMPolicy     domain.DMPolicy     `json:"dm_policy"`
	HasPassword  bool                `json:"has_password"`
}

// ExportConversation is one conversation of an export: the seqs the user
// may read (min_seq..max_seq, max_seq 0 = up to the newest), the user's
// read_seq and the seq they cleared the history up to.
type ExportConversation struct {
	ConversationID string `json:"conversation_id"`
	MinSeq         int64  `json:"min_seq"`
	MaxSeq         int64  `json:"max_seq"`
	ReadSeq        int64  `json:"read_seq"`
	ClearedSeq     int64  `json:"cleared_seq"`
}

// Exportable returns domain.ErrUserNotFound for an unknown userID (so a
// route can answer an error before it starts streaming).
func (s *Service) Exportable(ctx context.Context, userID string) error {
	_, err := s.d.Users.Get(ctx, userID)
	return err
}

// Export writes userID's data to w as one JSON object, streamed:
//
//	{"exported_at": ms, "user": ExportProfile, "groups": [GroupJSON...],
//	 "conversations": [ExportConversation...],
//	 "messages": [MessageJSON...]}
//
// messages are every stored message of the user's conversations that the
// user may read — those they sent and those they received — by
// conversation_id then seq; a recalled message is shown as recalled, as a
// pull shows it. Memory stays constant: the messages are read exportPage
// at a time and written as they are read. An unknown user is
// domain.ErrUserNotFound before anything is written; an error after the
// first byte ends the stream early (the JSON is then incomplete, which a
// reader detects).
func (s *Service) Export(ctx context.Context, userID string, w io.Writer) error {
	_, err := s.export(ctx, userID, w, nil)
	return err
}

// export writes the JSON export of userID to w, calling each (when not
// nil) for every message it writes, and returns the user.
func (s *Service) export(ctx context.Context, userID string, w io.Writer, each func(*domain.Message)) (domain.User, error) {
	u, err := s.d.Users.Get(ctx, userID)
	if err != nil {
		return domain.User{}, err
	}
	err = s.exportJSON(ctx, u, w, each)
	return u, err
}

func (s *Service) exportJSON(ctx context.Context, u domain.User, w io.Writer, each func(*domain.Message)) error {
	userID := u.ID
	bw := bufio.NewWriterSize(w, 32<<10)
	enc := json.NewEncoder(bw)
	put := func(parts ...string) {
		for _, p := range parts {
			_, _ = bw.WriteString(p)
		}
	}
	put(`{"exported_at":`, fmt.Sprint(time.Now().UnixMilli()), `,"user":`)
	if err := enc.Encode(ExportProfile{UserID: u.ID, Nickname: u.Nickname, Avatar: u.Avatar, CreatedAt: u.CreatedAt,
		UpdatedAt: u.UpdatedAt, Disabled: u.Disabled, GroupInvites: u.GroupInvites.OrDefault(), DMPolicy: u.DMPolicy.OrDefault(),
		HasPassword: u.PasswordHash != ""}); err != nil {
		return err
	}
	put(`,"groups":[`)
	if err := s.exportGroups(ctx, userID, enc, put); err != nil {
		return err
	}
	convs, err := s.d.Store.ExportConversations(ctx, userID)
	if err != nil {
		return err
	}
	put(`],"conversations":[`)
	for i, c := range convs {
		if i > 0 {
			put(",")
		}
		if err := enc.Encode(ExportConversation{ConversationID: c.ConversationID, MinSeq: c.MinSeq, MaxSeq: c.MaxSeq,
			ReadSeq: c.ReadSeq, ClearedSeq: c.ClearedSeq}); err != nil {
			return err
		}
	}
	put(`],"messages":[`)
	first := true
	for _, c := range convs {
		after := max(c.MinSeq-1, 0)
		for {
			page, err := s.d.Store.ExportPage(ctx, c.ConversationID, after, c.MaxSeq, exportPage)
			if err != nil {
				return err
			}
			for i := range page {
				if !first {
					put(",")
				}
				first = false
				if err := enc.Encode(chat.ToJSON(&page[i])); err != nil {
					return err
				}
				if each != nil {
					each(&page[i])
				}
			}
			if len(page) < exportPage {
				break
			}
			after = page[len(page)-1].Seq
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		// Flush per conversation: the client sees progress and the buffer
		// never grows past one page.
		if err := bw.Flush(); err != nil {
			return err
		}
	}
	put("]}\n")
	return bw.Flush()
}

// exportGroups writes the groups userID is an active member of.
func (s *Service) exportGroups(ctx context.Context, userID string, enc *json.Encoder, put func(...string)) error {
	cursor, n := "", 0
	for {
		page, err := s.d.Groups.List(ctx, userID, cursor, group.MaxListPage)
		if err != nil {
			return err
		}
		for _, g := range page.Groups {
			if n > 0 {
				put(",")
			}
			n++
			if err := enc.Encode(g); err != nil {
				return err
			}
		}
		if page.NextCursor == "" || len(page.Groups) == 0 {
			return nil
		}
		cursor = page.NextCursor
	}
}
