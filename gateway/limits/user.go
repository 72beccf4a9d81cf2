package limits

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nexo-im/nexo/gateway/wire"
)

// KindUser is the per-user request limit's name (metrics label, key part).
const KindUser = "user"

// UserRequests is the one per-user request limit (ws.rate_limit,
// ws.rate_burst) that every WebSocket request and every HTTP send counts
// against, on every instance: a user cannot get more by reconnecting,
// opening more connections, switching transport or instance.
type UserRequests struct {
	s *Synced
}

// NewUserRequests returns the per-user limit; perSecond 0 disables it.
func NewUserRequests(l *Limiter, perSecond float64, burst int) *UserRequests {
	return &UserRequests{s: NewSynced(l, KindUser, PerSecond(perSecond, burst))}
}

// AllowRequest counts one request of userID: nil, or too_many_requests
// with RetryAfter. It asks Redis at most every SyncInterval while the user
// stays within the limit (Synced): the message hot path pays no round trip
// per request.
func (u *UserRequests) AllowRequest(ctx context.Context, userID string) error {
	if u == nil {
		return nil
	}
	return u.s.Allow(ctx, userID)
}

// KindGroupInvite is the per-user group invitation limit's name.
const KindGroupInvite = "group_invite"

// Invites is the per-user limit on users added to groups by someone else
// (limits.group_invite): every user a /group/invite or /group/create adds
// counts one, on every instance.
type Invites struct {
	l    *Limiter
	rule Rule
}

// NewInvites returns the invitation limit; a rule with rate 0 disables it.
func NewInvites(l *Limiter, rule Rule) *Invites { return &Invites{l: l, rule: rule} }

// AllowInvites counts n users added by userID: nil, too_many_requests with
// RetryAfter, or bad_request when n exceeds the rule's burst.
func (v *Invites) AllowInvites(ctx context.Context, userID string, n int) error {
	if v == nil {
		return nil
	}
	return v.l.AllowN(ctx, KindGroupInvite, userID, v.rule, n)
}

// KindGroupAdded is the limit on how often one user is added to groups by
// others (metrics label, key part).
const KindGroupAdded = "group_added"

// Added is the per-user limit on being added to groups by someone else
// (limits.group_added), whoever adds them, on every instance: one account,
// or many, cannot put the same stranger into hundreds of groups. It
// implements group.AddedLimit.
type Added struct {
	l    *Limiter
	rule Rule
}

// KindSearch is the per-user search limit's name.
const KindSearch = "search"

// Searches is the per-user limit on searches (limits.search): every
// message, user or group search counts one, on every instance.
type Searches struct {
	l    *Limiter
	rule Rule
}

// NewAdded returns the limit; a rule with rate 0 disables it.
func NewAdded(l *Limiter, rule Rule) *Added { return &Added{l: l, rule: rule} }

// AllowAdded counts one add of each of userIDs, in order: nil, or
// too_many_requests with RetryAfter naming the limit and the first user
// over it (the users before it stay counted).
func (a *Added) AllowAdded(ctx context.Context, userIDs []string) error {
	if a == nil {
		return nil
	}
	for _, id := range userIDs {
		if err := a.l.Allow(ctx, KindGroupAdded, id, a.rule); err != nil {
			var we *wire.Error
			if errors.As(err, &we) && we.Reason == wire.ReasonTooManyRequests {
				refused := *we
				refused.Detail = fmt.Sprintf("%s was added to groups too often lately (limits.group_added); retry in %s",
					id, we.RetryAfter.Round(time.Second))
				return &refused
			}
			return err
		}
	}
	return nil
}

// NewSearches returns the search limit; a rule with rate 0 disables it.
func NewSearches(l *Limiter, rule Rule) *Searches { return &Searches{l: l, rule: rule} }

// AllowSearch counts one search of userID: nil, or too_many_requests with
// RetryAfter.
func (s *Searches) AllowSearch(ctx context.Context, userID string) error {
	if s == nil || s.rule.Rate == 0 {
		return nil
	}
	return s.l.AllowN(ctx, KindSearch, userID, s.rule, 1)
}

// KindReport is the per-user report limit's name.
const KindReport = "report"

// Reports is the per-user limit on message reports (limits.report): every
// POST /msg/report and WS 1113 counts one, on every instance.
type Reports struct {
	l    *Limiter
	rule Rule
}

// NewReports returns the report limit; a rule with rate 0 disables it.
func NewReports(l *Limiter, rule Rule) *Reports { return &Reports{l: l, rule: rule} }

// AllowReport counts one report of userID: nil, or too_many_requests with
// RetryAfter.
func (r *Reports) AllowReport(ctx context.Context, userID string) error {
	if r == nil || r.rule.Rate == 0 {
		return nil
	}
	return r.l.AllowN(ctx, KindReport, userID, r.rule, 1)
}
