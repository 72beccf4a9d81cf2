package search

import (
	"context"

	"github.com/nexo-im/nexo/domain"
	"github.com/nexo-im/nexo/services/group"
)

// DirectoryLimit is the most users or groups one lookup returns.
const DirectoryLimit = 50

// UserJSON is a user found by GET /user/search: the public profile.
type UserJSON struct {
	UserID   string `json:"user_id"`
	Nickname string `json:"nickname"`
	Avatar   string `json:"avatar"`
}

// UserResult is the answer of GET /user/search.
type UserResult struct {
	Results []UserJSON `json:"results"`
}

// GroupJSON is a group found by GET /group/search.
type GroupJSON struct {
	GroupID      string `json:"group_id"`
	Name         string `json:"name"`
	Introduction string `json:"introduction"`
	Avatar       string `json:"avatar"`
	JoinPolicy   string `json:"join_policy"`
}

// GroupResult is the answer of GET /group/search.
type GroupResult struct {
	Results []GroupJSON `json:"results"`
}

// directoryLimit reads a lookup's limit: 0 is DirectoryLimit.
func directoryLimit(limit int) (int, error) {
	if limit < 0 || limit > DirectoryLimit {
		return 0, domain.BadField("limit", "must be 0..%d", DirectoryLimit)
	}
	if limit == 0 {
		return DirectoryLimit, nil
	}
	return limit, nil
}

// Users finds enabled users by user_id prefix or nickname, by user_id.
func (s *Service) Users(ctx context.Context, keyword string, limit int) (UserResult, error) {
	k, err := CheckKeyword("keyword", keyword)
	if err != nil {
		return UserResult{}, err
	}
	if limit, err = directoryLimit(limit); err != nil {
		return UserResult{}, err
	}
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	users, err := s.repo.SearchUsers(ctx, k, limit)
	if err != nil {
		return UserResult{}, s.timedOut(ctx, err)
	}
	out := UserResult{Results: make([]UserJSON, len(users))}
	for i, u := range users {
		out.Results[i] = UserJSON{UserID: u.ID, Nickname: u.Nickname, Avatar: u.Avatar}
	}
	return out, nil
}

// Groups finds groups by name that userID can see or join: groups it is
// in, and open or approval groups; never dismissed ones. With userID ""
// (the server API) only open and approval groups are found.
func (s *Service) Groups(ctx context.Context, userID, keyword string, limit int) (GroupResult, error) {
	k, err := CheckKeyword("keyword", keyword)
	if err != nil {
		return GroupResult{}, err
	}
	if limit, err = directoryLimit(limit); err != nil {
		return GroupResult{}, err
	}
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	groups, err := s.repo.SearchGroups(ctx, userID, k, []string{group.PolicyOpen, group.PolicyApproval}, limit)
	if err != nil {
		return GroupResult{}, s.timedOut(ctx, err)
	}
	out := GroupResult{Results: make([]GroupJSON, len(groups))}
	for i, g := range groups {
		out.Results[i] = GroupJSON{GroupID: g.ID, Name: g.Name, Introduction: g.Introduction, Avatar: g.Avatar, JoinPolicy: g.JoinPolicy}
	}
	return out, nil
}

// timedOut turns a lookup stopped by its deadline into search_timeout.
func (s *Service) timedOut(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return domain.NewError(domain.ErrSearchTimeout, "the search took longer than "+s.timeout.String())
	}
	return err
}
