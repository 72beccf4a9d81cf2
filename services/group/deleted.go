package group

import (
	"context"
	"errors"
	"fmt"

	"github.com/nexo-im/nexo/domain"
)

// LeftGroups is what LeaveAll did: the groups handed to another owner, the
// groups dismissed and the groups quit, by ID.
type LeftGroups struct {
	Transferred map[string]string `json:"transferred"` // group_id → new owner
	Dismissed   []string          `json:"dismissed"`
	Quit        []string          `json:"quit"`
}

// LeaveAll takes userID out of every group they are an active member of,
// for an account being deleted, through the ordinary paths so that every
// member gets the usual notifications: a group they own goes to its
// longest-serving admin (the earliest joined_at; Transfer) and they quit
// it, or, with no admin, it is dismissed (Dismiss); any other group they
// quit (Quit). It goes on past a group that fails and returns the first
// error with what it did; calling it again finishes the rest.
func (s *Service) LeaveAll(ctx context.Context, userID string) (LeftGroups, error) {
	out := LeftGroups{Transferred: map[string]string{}, Dismissed: []string{}, Quit: []string{}}
	var firstErr error
	var afterAt int64
	afterID := ""
	for {
		page, err := s.groups.UserGroups(ctx, userID, afterAt, afterID, 100)
		if err != nil {
			return out, err
		}
		for _, g := range page {
			if err := s.leave(ctx, userID, g, &out); err != nil && firstErr == nil {
				firstErr = fmt.Errorf("leave group %s: %w", g.ID, err)
			}
		}
		if len(page) < 100 {
			return out, firstErr
		}
		afterAt, afterID = page[len(page)-1].CreatedAt, page[len(page)-1].ID
	}
}

// leave takes userID out of g (LeaveAll).
func (s *Service) leave(ctx context.Context, userID string, g domain.Group, out *LeftGroups) error {
	if g.Status == domain.GroupDismissed {
		// Nothing to hand over and nobody to notify: the membership row
		// stays as the record of past membership.
		return nil
	}
	if g.OwnerUserID != userID {
		_, err := s.Quit(ctx, userID, g.ID)
		if err == nil {
			out.Quit = append(out.Quit, g.ID)
		}
		return err
	}
	heir, err := s.longestAdmin(ctx, g.ID, userID)
	if err != nil {
		return err
	}
	if heir == "" {
		_, err := s.Dismiss(ctx, userID, g.ID)
		if err == nil || errors.Is(err, domain.ErrGroupDismissed) {
			out.Dismissed = append(out.Dismissed, g.ID)
			return nil
		}
		return err
	}
	if _, err := s.Transfer(ctx, userID, TransferRequest{GroupID: g.ID, NewOwnerID: heir}); err != nil {
		return err
	}
	out.Transferred[g.ID] = heir
	if _, err := s.Quit(ctx, userID, g.ID); err != nil {
		return err
	}
	out.Quit = append(out.Quit, g.ID)
	return nil
}

// longestAdmin returns the active admin of groupID other than skip who
// joined first ("" when there is none). Members are listed owner first,
// then admins, so the walk stops at the first plain member.
func (s *Service) longestAdmin(ctx context.Context, groupID, skip string) (string, error) {
	best, bestAt := "", int64(0)
	const page = 100
	for off := 0; ; off += page {
		ms, _, err := s.groups.ListMembers(ctx, groupID, off, page)
		if err != nil {
			return "", err
		}
		for _, m := range ms {
			if m.RoleLevel < domain.RoleAdmin {
				return best, nil
			}
			if m.RoleLevel == domain.RoleAdmin && m.UserID != skip && (best == "" || m.JoinedAt < bestAt) {
				best, bestAt = m.UserID, m.JoinedAt
			}
		}
		if len(ms) < page {
			return best, nil
		}
	}
}
