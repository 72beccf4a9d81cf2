package group

import (
	"context"
)

// ActiveMembers returns the group's active members, each with their
// recv_msg_opt (0 normal, 1 no push, 2 push without notification), from
// the member cache; an unknown group is an empty map. Typing indicators
// and offline push use it.
func (m *Members) ActiveMembers(ctx context.Context, groupID string) (map[string]int, error) {
	s, err := m.get(ctx, groupID)
	if err != nil {
		return nil, err
	}
	out := make(map[string]int, s.active)
	if s.state == nil {
		return out, nil
	}
	for id, mem := range s.state.Members {
		if mem.Active() {
			out[id] = mem.RecvMsgOpt
		}
	}
	return out, nil
}
