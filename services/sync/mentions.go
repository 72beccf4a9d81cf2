package sync

import (
	"context"
	"errors"
	"fmt"

	"github.com/nexo-im/nexo/domain"
	"github.com/nexo-im/nexo/services/chat"
	"github.com/nexo-im/nexo/streams"
)

// MentionGate checks a send's at_user_ids against the conversation before
// anything is allocated. It wraps the accept step (chat.Accepter), which
// every send path of chat.Service runs first — two-phase, synchronous, and
// before the Redis-down fallback — so chat needs no change: hand
// NewMentionGate(accepter, members) to chat.Deps.Accepter. Check is
// exported for a direct hook as well.
type MentionGate struct {
	chat.Accepter
	roles MemberRoles
}

// NewMentionGate wraps inner; roles (group.Members) may be nil until group
// chat is wired (mentions in groups are then refused).
func NewMentionGate(inner chat.Accepter, roles MemberRoles) *MentionGate {
	return &MentionGate{Accepter: inner, roles: roles}
}

// Accept checks the mentions of req.Msg, then runs the wrapped accept step.
func (g *MentionGate) Accept(ctx context.Context, req streams.AcceptRequest) (streams.Accepted, error) {
	if err := g.Check(ctx, &req.Msg); err != nil {
		return streams.Accepted{}, err
	}
	return g.Accepter.Accept(ctx, req)
}

// Check validates m.AtUserIDs (their shape is chat's): in a group each ID
// must be an active member, and "all" is for the owner and admins only;
// in single chat only the two parties may be mentioned. Server-made
// messages are not checked. Errors: bad_request naming the ID, forbidden
// for @all by a plain member, or the member lookup's transient error.
func (g *MentionGate) Check(ctx context.Context, m *domain.Message) error {
	if len(m.AtUserIDs) == 0 || m.MsgType >= domain.MsgNotificationMin {
		return nil
	}
	seen := make(map[string]bool, len(m.AtUserIDs))
	for _, u := range m.AtUserIDs {
		if seen[u] {
			continue
		}
		seen[u] = true
		if err := g.checkOne(ctx, m, u); err != nil {
			return err
		}
	}
	return nil
}

func (g *MentionGate) checkOne(ctx context.Context, m *domain.Message, u string) error {
	if m.SessionType != domain.SessionGroup {
		if u != m.SenderID && u != m.RecvID {
			return domain.BadField("at_user_ids", "%q is not a party of this conversation", u)
		}
		return nil
	}
	if g.roles == nil {
		return domain.ErrGroupNotFound
	}
	if u == chat.AtAll {
		role, err := g.roles.CheckMember(ctx, m.GroupID, m.SenderID)
		if err != nil {
			return err
		}
		if role < domain.RoleAdmin {
			return domain.NewError(domain.ErrForbidden, "at_user_ids: only the group's owner and admins may mention \"all\"")
		}
		return nil
	}
	_, err := g.roles.CheckMember(ctx, m.GroupID, u)
	switch {
	case errors.Is(err, domain.ErrNotGroupMember), errors.Is(err, domain.ErrMemberNotActive):
		return domain.BadField("at_user_ids", "%q is not a member of the group", u)
	case err != nil:
		return fmt.Errorf("check mention of %s: %w", u, err)
	}
	return nil
}
