package chat

import (
	"context"
	"errors"
	"log/slog"
	"testing"

	"github.com/nexo-im/nexo/configs"
	"github.com/nexo-im/nexo/domain"
	"github.com/nexo-im/nexo/gateway/wire"
	"github.com/nexo-im/nexo/streams"
)

// roster is a GroupGate over one group's roles; a user in left has left
// (member_not_active), anyone else is not a member.
type roster struct {
	roles map[string]domain.RoleLevel
	left  map[string]bool
}

func (r roster) CheckSend(ctx context.Context, _, userID string) error {
	_, err := r.CheckMember(ctx, "", userID)
	return err
}

func (r roster) CheckMember(_ context.Context, _, userID string) (domain.RoleLevel, error) {
	if role, ok := r.roles[userID]; ok {
		return role, nil
	}
	if r.left[userID] {
		return 0, domain.ErrMemberNotActive
	}
	return 0, domain.ErrNotGroupMember
}

// hookLog is a before_send that allows everything and records what it saw.
type hookLog struct{ seen []string }

func (h *hookLog) BeforeSend(_ context.Context, m *domain.Message) error {
	h.seen = append(h.seen, m.ClientMsgID)
	return nil
}

// acceptLog accepts two-phase and counts the seqs it issued.
type acceptLog struct{ issued int64 }

func (a *acceptLog) Accept(context.Context, streams.AcceptRequest) (streams.Accepted, error) {
	a.issued++
	return streams.Accepted{Seq: a.issued}, nil
}
func (a *acceptLog) Retire(context.Context, string, int64) error { return nil }
func (a *acceptLog) MarkSaved(context.Context, *domain.Message, int64) error {
	return errors.New("not on the two-phase path")
}

// TestMentionsCheckedBeforeBeforeSend: at_user_ids must name active members
// of the group, "all" is for the owner and admins, and in single chat only
// the two parties; a refused mention is answered before the app's
// before_send hears of the send and before a seq is issued.
func TestMentionsCheckedBeforeBeforeSend(t *testing.T) {
	hook, accept := &hookLog{}, &acceptLog{}
	s := NewService(Deps{Mode: NewMode(configs.TwoPhase{Enabled: true}), Msg: configs.Default().Msg, Accepter: accept,
		Users: everyone{}, Hook: hook, Log: slog.New(slog.DiscardHandler),
		Groups: roster{roles: map[string]domain.RoleLevel{"alice": domain.RoleOwner, "bob": domain.RoleMember, "carol": domain.RoleMember, "ivy": domain.RoleAdmin},
			left: map[string]bool{"erin": true}}})
	cases := []struct {
		name   string
		sender string
		group  bool
		at     []string
		reason wire.Reason // "" = allowed
	}{
		{"a member", "bob", true, []string{"carol"}, ""},
		{"two members and a repeat", "bob", true, []string{"carol", "alice", "carol"}, ""},
		{"not a member", "bob", true, []string{"dave"}, wire.ReasonBadRequest},
		{"left the group", "bob", true, []string{"erin"}, wire.ReasonBadRequest},
		{"all by a member", "bob", true, []string{"all"}, wire.ReasonForbidden},
		{"all by the owner", "alice", true, []string{"all"}, ""},
		{"all by an admin", "ivy", true, []string{"all"}, ""},
		{"single: the receiver", "alice", false, []string{"bob"}, ""},
		{"single: the sender", "alice", false, []string{"alice"}, ""},
		{"single: a third user", "alice", false, []string{"carol"}, wire.ReasonBadRequest},
		{"single: all", "alice", false, []string{"all"}, wire.ReasonBadRequest},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			req := SendRequest{ClientMsgID: c.name, SessionType: int(domain.SessionSingle), RecvID: "bob",
				MsgType: int(domain.MsgAtText), Content: ContentJSON{Text: "hi"}, AtUserIDs: c.at}
			if c.group {
				req.SessionType, req.RecvID, req.GroupID = int(domain.SessionGroup), "", "g1"
			}
			hooked, issued := len(hook.seen), accept.issued
			_, err := s.Send(context.Background(), Origin{UserID: c.sender}, req)
			if c.reason == "" {
				if err != nil || len(hook.seen) != hooked+1 || accept.issued != issued+1 {
					t.Fatalf("allowed send: %v (before_send called %d times, %d seqs)", err, len(hook.seen)-hooked, accept.issued-issued)
				}
				return
			}
			var we *wire.Error
			if !asWire(err, &we) || we.Reason != c.reason {
				t.Fatalf("error %v, want %s", err, c.reason)
			}
			if len(hook.seen) != hooked || accept.issued != issued {
				t.Fatalf("refused mention reached before_send (%v) or the accept step (%d seqs)", hook.seen[hooked:], accept.issued-issued)
			}
		})
	}
}
