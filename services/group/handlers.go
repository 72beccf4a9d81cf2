// Package group is Nexo's group chat: the management rules behind the
// /group/* HTTP API (create, join, invite, quit, kick, transfer, roles,
// dismiss, update, info, members, list, join applications), the member lookups every group
// send and pull go through (CheckSend, Bounds; a two-level cache that every
// change invalidates), and the group fanout with its push strategies.
// Changes are also notification messages in the group conversation
// (msg_type 1501–1509), whose seqs order membership against the chat.
// docs/groups.md describes the rules, the visibility model and the push
// strategy.
package group

import (
	"context"
	"log/slog"
	"strconv"

	"github.com/cloudwego/hertz/pkg/app"

	"github.com/nexo-im/nexo/domain"
	"github.com/nexo-im/nexo/gateway/api"
	"github.com/nexo-im/nexo/gateway/auth"
)

// Router registers HTTP routes (gateway.Server).
type Router interface {
	Route(method, path string, handler app.HandlerFunc, authenticated bool)
}

// InviteLimiter counts the users one user adds to groups, shared by every
// instance (limits.Invites): nil when allowed, else too_many_requests with
// a retry-after, or bad_request for more users at once than the limit's
// burst.
type InviteLimiter interface {
	AllowInvites(ctx context.Context, userID string, n int) error
}

// Handlers binds the group service to HTTP.
type Handlers struct {
	svc     *Service
	maxBody int
	invites InviteLimiter
	log     *slog.Logger
}

// NewHandlers returns the handlers; maxBody is http.max_body_bytes;
// invites limits who users add to groups through /group/create and
// /group/invite (nil: no limit). The server API is not limited: it is the
// app's trusted backend.
func NewHandlers(svc *Service, maxBody int, invites InviteLimiter, log *slog.Logger) *Handlers {
	return &Handlers{svc: svc, maxBody: maxBody, invites: invites, log: log}
}

// allowInvites counts the distinct users other than caller that ids adds.
func (h *Handlers) allowInvites(ctx context.Context, caller string, ids []string) error {
	if h.invites == nil {
		return nil
	}
	if n := len(distinct(ids, caller)); n > 0 {
		return h.invites.AllowInvites(ctx, caller, n)
	}
	return nil
}

// Register mounts every /group/* route, all authenticated.
func (h *Handlers) Register(r Router) {
	r.Route("POST", "/group/create", h.create, true)
	r.Route("POST", "/group/join", h.join, true)
	r.Route("POST", "/group/invite", h.invite, true)
	r.Route("POST", "/group/quit", h.quit, true)
	r.Route("POST", "/group/kick", h.kick, true)
	r.Route("POST", "/group/transfer", h.transfer, true)
	r.Route("POST", "/group/set_role", h.setRole, true)
	r.Route("POST", "/group/dismiss", h.dismiss, true)
	r.Route("POST", "/group/update", h.update, true)
	r.Route("GET", "/group/info", h.info, true)
	r.Route("GET", "/group/members", h.members, true)
	r.Route("GET", "/group/list", h.list, true)
	r.Route("GET", "/group/applications", h.applications, true)
	r.Route("POST", "/group/application/respond", h.respond, true)
}

func (h *Handlers) create(ctx context.Context, c *app.RequestContext) {
	api.JSON(h.maxBody, h.log, func(ctx context.Context, caller string, r CreateRequest) (GroupJSON, error) {
		if err := h.allowInvites(ctx, caller, r.MemberIDs); err != nil {
			return GroupJSON{}, err
		}
		return h.svc.Create(ctx, caller, r)
	})(ctx, c)
}

func (h *Handlers) join(ctx context.Context, c *app.RequestContext) {
	api.JSON(h.maxBody, h.log, func(ctx context.Context, caller string, r JoinRequest) (MemberJSON, error) {
		return h.svc.JoinWithMessage(ctx, caller, r.GroupID, r.ReqMsg)
	})(ctx, c)
}

func (h *Handlers) invite(ctx context.Context, c *app.RequestContext) {
	api.JSON(h.maxBody, h.log, func(ctx context.Context, caller string, r UsersRequest) (InviteResult, error) {
		if err := h.allowInvites(ctx, caller, r.UserIDs); err != nil {
			return InviteResult{GroupID: r.GroupID, Invited: []MemberJSON{}, Skipped: []string{}}, err
		}
		return h.svc.Invite(ctx, caller, r)
	})(ctx, c)
}

func (h *Handlers) respond(ctx context.Context, c *app.RequestContext) {
	api.JSON(h.maxBody, h.log, h.svc.RespondApplication)(ctx, c)
}

func (h *Handlers) quit(ctx context.Context, c *app.RequestContext) {
	api.JSON(h.maxBody, h.log, func(ctx context.Context, caller string, r GroupRequest) (MemberJSON, error) {
		return h.svc.Quit(ctx, caller, r.GroupID)
	})(ctx, c)
}

func (h *Handlers) kick(ctx context.Context, c *app.RequestContext) {
	api.JSON(h.maxBody, h.log, h.svc.Kick)(ctx, c)
}

func (h *Handlers) transfer(ctx context.Context, c *app.RequestContext) {
	api.JSON(h.maxBody, h.log, h.svc.Transfer)(ctx, c)
}

func (h *Handlers) setRole(ctx context.Context, c *app.RequestContext) {
	api.JSON(h.maxBody, h.log, h.svc.SetRole)(ctx, c)
}

func (h *Handlers) dismiss(ctx context.Context, c *app.RequestContext) {
	api.JSON(h.maxBody, h.log, func(ctx context.Context, caller string, r GroupRequest) (GroupJSON, error) {
		return h.svc.Dismiss(ctx, caller, r.GroupID)
	})(ctx, c)
}

func (h *Handlers) update(ctx context.Context, c *app.RequestContext) {
	api.JSON(h.maxBody, h.log, h.svc.Update)(ctx, c)
}

func (h *Handlers) info(ctx context.Context, c *app.RequestContext) {
	claims, _ := auth.ClaimsOf(c)
	id := string(c.Query("group_id"))
	if err := checkGroupID(id); err != nil {
		api.WriteError(ctx, c, h.log, err)
		return
	}
	res, err := h.svc.InfoFor(ctx, claims.UserID, id)
	if err != nil {
		api.WriteError(ctx, c, h.log, err)
		return
	}
	api.WriteOK(c, res)
}

func (h *Handlers) members(ctx context.Context, c *app.RequestContext) {
	claims, _ := auth.ClaimsOf(c)
	id := string(c.Query("group_id"))
	if err := checkGroupID(id); err != nil {
		api.WriteError(ctx, c, h.log, err)
		return
	}
	var page [2]int
	for i, name := range []string{"offset", "limit"} {
		if v := string(c.Query(name)); v != "" {
			n, err := strconv.Atoi(v)
			if err != nil {
				api.WriteError(ctx, c, h.log, domain.BadField(name, "must be an integer"))
				return
			}
			page[i] = n
		}
	}
	res, err := h.svc.Members(ctx, claims.UserID, id, page[0], page[1])
	if err != nil {
		api.WriteError(ctx, c, h.log, err)
		return
	}
	api.WriteOK(c, res)
}

// list serves GET /group/list?cursor=&limit=.
func (h *Handlers) list(ctx context.Context, c *app.RequestContext) {
	claims, _ := auth.ClaimsOf(c)
	limit, err := queryInt(c, "limit")
	if err != nil {
		api.WriteError(ctx, c, h.log, err)
		return
	}
	res, err := h.svc.List(ctx, claims.UserID, string(c.Query("cursor")), limit)
	if err != nil {
		api.WriteError(ctx, c, h.log, err)
		return
	}
	api.WriteOK(c, res)
}

// applications serves GET /group/applications?group_id=&cursor=&limit=.
func (h *Handlers) applications(ctx context.Context, c *app.RequestContext) {
	claims, _ := auth.ClaimsOf(c)
	id := string(c.Query("group_id"))
	if err := checkGroupID(id); err != nil {
		api.WriteError(ctx, c, h.log, err)
		return
	}
	limit, err := queryInt(c, "limit")
	if err != nil {
		api.WriteError(ctx, c, h.log, err)
		return
	}
	res, err := h.svc.Applications(ctx, claims.UserID, id, string(c.Query("cursor")), limit)
	if err != nil {
		api.WriteError(ctx, c, h.log, err)
		return
	}
	api.WriteOK(c, res)
}

// queryInt reads an optional integer query parameter (absent: 0).
func queryInt(c *app.RequestContext, name string) (int, error) {
	v := string(c.Query(name))
	if v == "" {
		return 0, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		return 0, domain.BadField(name, "must be an integer")
	}
	return n, nil
}
