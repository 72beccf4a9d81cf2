package group

import (
	"context"
	"fmt"
	"sort"

	"github.com/nexo-im/nexo/domain"
)

// SawSeq returns, sorted, the members of the group who could see seq of
// its conversation: joined at or before it (join_seq <= seq) and, if they
// left, capped at or above it. It answers from the member cache; an
// unknown group is domain.ErrGroupNotFound. Read-by lists and read counts
// are made of it (docs/actions.md).
func (m *Members) SawSeq(ctx context.Context, groupID string, seq int64) ([]string, error) {
	s, err := m.get(ctx, groupID)
	if err != nil {
		return nil, err
	}
	if s.state == nil {
		return nil, fmt.Errorf("group %s: %w", groupID, domain.ErrGroupNotFound)
	}
	out := make([]string, 0, len(s.state.Members))
	for id, mem := range s.state.Members {
		if max(mem.JoinSeq, 1) > seq {
			continue
		}
		if !mem.Active() && max(mem.CapSeq, mem.JoinSeq) < seq {
			continue
		}
		out = append(out, id)
	}
	sort.Strings(out)
	return out, nil
}
