package group

import (
	"context"
	"errors"
	"strconv"
	"time"

	"github.com/nexo-im/nexo/domain"
)

// Join applications of approval groups (OpenIM's group applications):
// /group/join files one, the owner and admins list them with
// GET /group/applications and answer with POST /group/application/respond.
// Accepting adds the applicant the way an invitation does (announced
// first, then written; max_members, notifications, webhooks and seq rules
// alike).

// StatusPending is MemberJSON.status of a /group/join answer on an approval
// group: an application was filed, the caller is not a member yet.
const StatusPending = "pending"

// ApplicationJSON is a join application on the wire. status is "pending",
// "accepted" or "rejected"; handler_user_id is who answered it; times are
// Unix milliseconds (handled_at 0 while pending).
type ApplicationJSON struct {
	GroupID       string `json:"group_id"`
	UserID        string `json:"user_id"`
	ReqMsg        string `json:"req_msg"`
	Status        string `json:"status"`
	HandlerUserID string `json:"handler_user_id"`
	CreatedAt     int64  `json:"created_at"`
	HandledAt     int64  `json:"handled_at"`
}

// ApplicationOf renders a.
func ApplicationOf(a domain.GroupApplication) ApplicationJSON {
	status := StatusPending
	switch a.Status {
	case domain.ApplicationAccepted:
		status = "accepted"
	case domain.ApplicationRejected:
		status = "rejected"
	}
	return ApplicationJSON{GroupID: a.GroupID, UserID: a.UserID, ReqMsg: a.ReqMsg, Status: status,
		HandlerUserID: a.HandlerUserID, CreatedAt: a.CreatedAt, HandledAt: a.HandledAt}
}

// ApplicationsPage answers GET /group/applications: pending applications,
// oldest first, and the cursor of the next page ("" after the last).
type ApplicationsPage struct {
	Applications []ApplicationJSON `json:"applications"`
	NextCursor   string            `json:"next_cursor"`
}

// RespondRequest is the body of POST /group/application/respond.
type RespondRequest struct {
	GroupID string `json:"group_id"`
	UserID  string `json:"user_id"`
	Accept  *bool  `json:"accept"`
}

// Validate requires both IDs and accept.
func (r *RespondRequest) Validate() error {
	if err := domain.CheckID("group_id", r.GroupID); err != nil {
		return err
	}
	if err := domain.CheckID("user_id", r.UserID); err != nil {
		return err
	}
	if r.Accept == nil {
		return domain.BadField("accept", "is required (true or false)")
	}
	return nil
}

// RespondResult answers POST /group/application/respond: the application
// as answered and, when accepted, the applicant's member row (else null).
type RespondResult struct {
	Application ApplicationJSON `json:"application"`
	Member      *MemberJSON     `json:"member"`
}

// apply files caller's application to an approval group (called by Join
// under the group's lock) and answers it as a pending member.
func (s *Service) apply(ctx context.Context, caller, groupID, reqMsg string) (MemberJSON, error) {
	if _, _, err := s.groups.Apply(ctx, domain.GroupApplication{GroupID: groupID, UserID: caller, ReqMsg: reqMsg}); err != nil {
		return MemberJSON{}, err
	}
	return MemberJSON{GroupID: groupID, UserID: caller, Status: StatusPending}, nil
}

// Applications returns a page of the group's pending applications, oldest
// first, for its owner and admins (also after the group is dismissed).
// cursor is next_cursor of the previous page ("" for the first); limit 0
// means DefaultListPage, above MaxListPage is bad_request. Errors:
// group_not_found, not_group_member, member_not_active, forbidden,
// bad_request (cursor, limit).
func (s *Service) Applications(ctx context.Context, caller, groupID, cursor string, limit int) (ApplicationsPage, error) {
	limit, err := pageLimit(limit)
	if err != nil {
		return ApplicationsPage{}, err
	}
	var after int64
	if cursor != "" {
		if after, err = strconv.ParseInt(cursor, 10, 64); err != nil || after < 0 {
			return ApplicationsPage{}, domain.BadField("cursor", "is not a cursor this list returned")
		}
	}
	role, err := s.members.CheckMember(ctx, groupID, caller)
	if err != nil {
		return ApplicationsPage{}, err
	}
	if role < domain.RoleAdmin {
		return ApplicationsPage{}, domain.NewError(domain.ErrForbidden, "only the owner and admins may see join applications")
	}
	rows, err := s.groups.PendingApplications(ctx, groupID, after, limit+1)
	if err != nil {
		return ApplicationsPage{}, err
	}
	page := ApplicationsPage{Applications: make([]ApplicationJSON, 0, min(len(rows), limit))}
	if len(rows) > limit {
		rows = rows[:limit]
		page.NextCursor = strconv.FormatInt(rows[limit-1].ID, 10)
	}
	for _, a := range rows {
		page.Applications = append(page.Applications, ApplicationOf(a))
	}
	return page, nil
}

// RespondApplication accepts or rejects a pending application; the owner
// and admins may. Accepting adds the applicant as an invitation does (a
// member_joined notification whose op_user_id is the caller, join_seq its
// seq, group.max_members applies); an applicant who became a member
// meanwhile is left as is. Errors: group_not_found, group_dismissed,
// not_group_member / member_not_active (caller), forbidden, not_found (no
// pending application of user_id), user_not_found, bad_request (the group
// is full).
func (s *Service) RespondApplication(ctx context.Context, caller string, req RespondRequest) (RespondResult, error) {
	var out RespondResult
	accept := req.Accept != nil && *req.Accept
	err := s.locked(ctx, req.GroupID, func(ctx context.Context) error {
		if _, _, err := s.authorize(ctx, req.GroupID, caller, domain.RoleAdmin, "only the owner and admins may answer join applications"); err != nil {
			return err
		}
		app, err := s.groups.PendingApplication(ctx, req.GroupID, req.UserID)
		if errors.Is(err, domain.ErrNotFound) {
			return domain.NewError(domain.ErrNotFound, "user_id: no pending application of "+req.UserID+" to this group")
		}
		if err != nil {
			return err
		}
		result := domain.ApplicationRejected
		if accept {
			result = domain.ApplicationAccepted
			if out.Member, err = s.admit(ctx, req.GroupID, caller, req.UserID); err != nil {
				return err
			}
		}
		if err := s.groups.AnswerApplication(ctx, req.GroupID, req.UserID, caller, result); err != nil {
			return err
		}
		app.Status, app.HandlerUserID, app.HandledAt = result, caller, time.Now().UnixMilli()
		out.Application = ApplicationOf(app)
		return nil
	})
	return out, err
}

// admit adds an accepted applicant unless it already is an active member.
func (s *Service) admit(ctx context.Context, groupID, op, userID string) (*MemberJSON, error) {
	if err := s.requireUsers(ctx, "user_id", []string{userID}); err != nil {
		return nil, err
	}
	m, err := s.groups.Member(ctx, groupID, userID)
	switch {
	case err == nil && m.Status == domain.MemberNormal:
		mj := MemberOf(m)
		return &mj, nil
	case err == nil && m.Status == domain.MemberBanned:
		return nil, domain.NewError(domain.ErrForbidden, "user_id: "+userID+" is banned from this group; unban them first")
	case err != nil && !errors.Is(err, domain.ErrNotGroupMember):
		return nil, err
	}
	added, err := s.add(ctx, groupID, op, op, []string{userID}, NotifyMemberJoined)
	if err != nil {
		return nil, err
	}
	return &added[0], nil
}

// pageLimit checks a list's limit: 0 is DefaultListPage, 1..MaxListPage
// as given, anything else bad_request.
func pageLimit(limit int) (int, error) {
	switch {
	case limit == 0:
		return DefaultListPage, nil
	case limit < 0 || limit > MaxListPage:
		return 0, domain.BadField("limit", "must be 1–%d (default %d)", MaxListPage, DefaultListPage)
	}
	return limit, nil
}
