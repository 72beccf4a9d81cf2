package routes

import (
	"context"
	"log/slog"

	"github.com/cloudwego/hertz/pkg/app"

	"github.com/nexo-im/nexo/domain"
	"github.com/nexo-im/nexo/gateway/api"
	"github.com/nexo-im/nexo/gateway/auth"
	"github.com/nexo-im/nexo/services/group"
)

// InviteLimiter counts the users one user adds to groups, shared by every
// instance (limits.Invites): nil when allowed, else too_many_requests with
// a retry-after, or bad_request for more users at once than the limit's
// burst.
type InviteLimiter interface {
	AllowInvites(ctx context.Context, userID string, n int) error
}

// Acting reads an operation's request on the server API: the user it runs
// as (named in the body) and the rest of the body decoded into dst, as
// strictly as the user API decodes it.
type Acting func(c *app.RequestContext, dst any) (userID string, err error)

// groupOp is one group operation of an acting user whose request is a
// JSON body, listed once for both APIs: the user API serves path as the
// token's user, the server API (when serverAPI) serves "/api"+path as the
// user its Acting reads.
type groupOp struct {
	method, path string
	serverAPI    bool
	user         func(maxBody int, log *slog.Logger) app.HandlerFunc
	acting       func(read Acting, log *slog.Logger) app.HandlerFunc
}

// op lists do as a groupOp.
func op[Req, Res any](method, path string, serverAPI bool, do func(ctx context.Context, caller string, req Req) (Res, error)) groupOp {
	return groupOp{method: method, path: path, serverAPI: serverAPI,
		user: func(maxBody int, log *slog.Logger) app.HandlerFunc { return api.JSON(maxBody, log, do) },
		acting: func(read Acting, log *slog.Logger) app.HandlerFunc {
			return func(ctx context.Context, c *app.RequestContext) {
				var req Req
				caller, err := read(c, &req)
				if err != nil {
					api.WriteError(ctx, c, log, err)
					return
				}
				res, err := do(ctx, caller, req)
				if err != nil {
					api.WriteError(ctx, c, log, err)
					return
				}
				api.WriteOK(c, res)
			}
		},
	}
}

// groupOps is the table of the group operations with a JSON body; invites
// (nil: no limit) limits the users create and invite add.
func groupOps(svc *group.Service, invites InviteLimiter) []groupOp {
	return []groupOp{
		op("POST", "/group/create", true, func(ctx context.Context, caller string, r group.CreateRequest) (group.GroupJSON, error) {
			if err := allowInvites(ctx, invites, caller, r.MemberIDs); err != nil {
				return group.GroupJSON{}, err
			}
			return svc.Create(ctx, caller, r)
		}),
		op("POST", "/group/join", false, func(ctx context.Context, caller string, r group.JoinRequest) (group.MemberJSON, error) {
			return svc.JoinWithMessage(ctx, caller, r.GroupID, r.ReqMsg)
		}),
		op("POST", "/group/invite", true, func(ctx context.Context, caller string, r group.UsersRequest) (group.InviteResult, error) {
			if err := allowInvites(ctx, invites, caller, r.UserIDs); err != nil {
				return group.InviteResult{}, err
			}
			return svc.Invite(ctx, caller, r)
		}),
		op("POST", "/group/quit", true, func(ctx context.Context, caller string, r group.GroupRequest) (group.MemberJSON, error) {
			return svc.Quit(ctx, caller, r.GroupID)
		}),
		op("POST", "/group/kick", true, svc.Kick),
		op("POST", "/group/transfer", true, svc.Transfer),
		op("POST", "/group/set_role", true, svc.SetRole),
		op("POST", "/group/dismiss", true, func(ctx context.Context, caller string, r group.GroupRequest) (group.GroupJSON, error) {
			return svc.Dismiss(ctx, caller, r.GroupID)
		}),
		op("POST", "/group/update", true, svc.Update),
		op("POST", "/group/application/respond", false, svc.RespondApplication),
		op("POST", "/group/mute_member", true, svc.MuteMember),
		op("POST", "/group/mute", true, svc.Mute),
		op("POST", "/group/ban", true, svc.Ban),
		op("POST", "/group/unban", true, svc.Unban),
	}
}

// allowInvites charges caller for the distinct users other than themself
// that ids adds.
func allowInvites(ctx context.Context, invites InviteLimiter, caller string, ids []string) error {
	if invites == nil {
		return nil
	}
	others := make(map[string]bool, len(ids))
	for _, id := range ids {
		if id != caller {
			others[id] = true
		}
	}
	if len(others) == 0 {
		return nil
	}
	return invites.AllowInvites(ctx, caller, len(others))
}

// Group mounts every /group/* route on r, all authenticated: the table's
// operations and the GET lookups. maxBody is http.max_body_bytes; invites
// limits the users create and invite add (nil: no limit).
func Group(r HTTP, svc *group.Service, maxBody int, invites InviteLimiter, log *slog.Logger) {
	for _, o := range groupOps(svc, invites) {
		r.Route(o.method, o.path, o.user(maxBody, log), true)
	}
	r.Route("GET", "/group/info", groupQuery(log, func(ctx context.Context, caller string, c *app.RequestContext) (group.GroupJSON, error) {
		id := string(c.Query("group_id"))
		if err := domain.CheckID("group_id", id); err != nil {
			return group.GroupJSON{}, err
		}
		return svc.InfoFor(ctx, caller, id)
	}), true)
	r.Route("GET", "/group/members", groupQuery(log, func(ctx context.Context, caller string, c *app.RequestContext) (group.MembersPage, error) {
		id := string(c.Query("group_id"))
		var offset, limit int
		if err := domain.CheckID("group_id", id); err != nil {
			return group.MembersPage{}, err
		}
		if err := api.QueryInt(c, "offset", &offset); err != nil {
			return group.MembersPage{}, err
		}
		if err := api.QueryInt(c, "limit", &limit); err != nil {
			return group.MembersPage{}, err
		}
		return svc.Members(ctx, caller, id, offset, limit)
	}), true)
	r.Route("GET", "/group/list", groupQuery(log, func(ctx context.Context, caller string, c *app.RequestContext) (group.GroupList, error) {
		var limit int
		if err := api.QueryInt(c, "limit", &limit); err != nil {
			return group.GroupList{}, err
		}
		return svc.List(ctx, caller, string(c.Query("cursor")), limit)
	}), true)
	r.Route("GET", "/group/applications", groupQuery(log, func(ctx context.Context, caller string, c *app.RequestContext) (group.ApplicationsPage, error) {
		id := string(c.Query("group_id"))
		var limit int
		if err := domain.CheckID("group_id", id); err != nil {
			return group.ApplicationsPage{}, err
		}
		if err := api.QueryInt(c, "limit", &limit); err != nil {
			return group.ApplicationsPage{}, err
		}
		return svc.Applications(ctx, caller, id, string(c.Query("cursor")), limit)
	}), true)
}

// GroupServerAPI mounts the server API's /api/group/* routes on r (which
// adds the apikey check): the table's operations marked for it, each as
// the user read reads from the body, and GET /api/group/info, which shows
// any group to the app's backend. The server API is not limited: it is the
// app's trusted backend.
func GroupServerAPI(r HTTP, svc *group.Service, read Acting, log *slog.Logger) {
	for _, o := range groupOps(svc, nil) {
		if o.serverAPI {
			r.Route(o.method, "/api"+o.path, o.acting(read, log), false)
		}
	}
	r.Route("GET", "/api/group/info", func(ctx context.Context, c *app.RequestContext) {
		id := string(c.Query("group_id"))
		if !domain.ValidID(id) {
			api.WriteError(ctx, c, log, domain.BadField("group_id", "is required"))
			return
		}
		g, err := svc.Info(ctx, id)
		if err != nil {
			api.WriteError(ctx, c, log, err)
			return
		}
		api.WriteOK(c, g)
	}, false)
}

// groupQuery adapts a lookup that reads its query parameters to an
// authenticated GET route: do runs as the token's user and its answer or
// error is written in the envelope.
func groupQuery[Res any](log *slog.Logger, do func(ctx context.Context, caller string, c *app.RequestContext) (Res, error)) app.HandlerFunc {
	return func(ctx context.Context, c *app.RequestContext) {
		claims, _ := auth.ClaimsOf(c)
		res, err := do(ctx, claims.UserID, c)
		if err != nil {
			api.WriteError(ctx, c, log, err)
			return
		}
		api.WriteOK(c, res)
	}
}
