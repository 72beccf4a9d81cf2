package serverapi

import (
	"context"

	"github.com/cloudwego/hertz/pkg/app"

	"github.com/nexo-im/nexo/domain"
	"github.com/nexo-im/nexo/gateway/api"
	"github.com/nexo-im/nexo/gateway/routes"
	"github.com/nexo-im/nexo/services/account"
	"github.com/nexo-im/nexo/services/privacy"
)

// The user and token routes: each binds its body and calls the account
// service (services/account), which holds the rules.

// bind decodes the body strictly (api.BindJSON) into a T.
func bind[T any](a *API, ctx context.Context, c *app.RequestContext) (T, bool) {
	var req T
	if err := api.BindJSON(c, a.d.MaxBody, &req); err != nil {
		api.WriteError(ctx, c, a.d.Log, err)
		return req, false
	}
	return req, true
}

// userOp adapts an account operation on the body Req to a route.
func userOp[Req, Res any](a *API, do func(ctx context.Context, req Req) (Res, error)) app.HandlerFunc {
	return func(ctx context.Context, c *app.RequestContext) {
		req, ok := bind[Req](a, ctx, c)
		if !ok {
			return
		}
		res, err := do(ctx, req)
		a.write(ctx, c, res, err)
	}
}

// createUser handles POST /api/user/create → the user; 409 user_exists.
func (a *API) createUser(ctx context.Context, c *app.RequestContext) {
	userOp(a, a.d.Accounts.CreateUser)(ctx, c)
}

// updateUser handles POST /api/user/update → the user.
func (a *API) updateUser(ctx context.Context, c *app.RequestContext) {
	userOp(a, a.d.Accounts.UpdateUser)(ctx, c)
}

// getUser handles GET /api/user/get?user_id= → the user.
func (a *API) getUser(ctx context.Context, c *app.RequestContext) {
	u, err := a.d.Accounts.GetUser(ctx, string(c.Query("user_id")))
	a.write(ctx, c, u, err)
}

// disableUser handles POST /api/user/disable → the user
// (account.Service.SetDisabled).
func (a *API) disableUser(ctx context.Context, c *app.RequestContext) {
	userOp(a, func(ctx context.Context, r account.UserRequest) (account.UserJSON, error) {
		return a.d.Accounts.SetDisabled(ctx, r.UserID, true)
	})(ctx, c)
}

// enableUser handles POST /api/user/enable → the user. Tokens issued
// before stay refused: issue new ones.
func (a *API) enableUser(ctx context.Context, c *app.RequestContext) {
	userOp(a, func(ctx context.Context, r account.UserRequest) (account.UserJSON, error) {
		return a.d.Accounts.SetDisabled(ctx, r.UserID, false)
	})(ctx, c)
}

// deleteUser handles POST /api/user/delete → what the deletion did
// (privacy.Service.Delete: tokens and sessions ended everywhere, groups
// handed over or dismissed, profile erased, user_id reserved).
func (a *API) deleteUser(ctx context.Context, c *app.RequestContext) {
	if a.d.Privacy == nil {
		userOp(a, func(ctx context.Context, r account.UserRequest) (struct{}, error) {
			return struct{}{}, a.d.Accounts.DeleteUser(ctx, r.UserID)
		})(ctx, c)
		return
	}
	userOp(a, func(ctx context.Context, r account.UserRequest) (privacy.DeletedJSON, error) {
		return a.d.Privacy.Delete(ctx, r.UserID)
	})(ctx, c)
}

// exportUser handles GET /api/user/export?user_id=[&format=json|zip] →
// the user's data, streamed as GET /user/export streams it; not
// rate-limited (the app's backend decides). 404 user_not_found, 400 a bad
// format.
func (a *API) exportUser(ctx context.Context, c *app.RequestContext) {
	id := string(c.Query("user_id"))
	if err := domain.CheckID("user_id", id); err != nil {
		api.WriteError(ctx, c, a.d.Log, err)
		return
	}
	format, err := routes.ExportFormat(c)
	if err != nil {
		api.WriteError(ctx, c, a.d.Log, err)
		return
	}
	routes.StreamExport(ctx, c, a.d.Privacy, id, format, a.d.Log)
}

// issueToken handles POST /api/token → {token, expire_at}: the app's "log
// this user in to chat". 404 user_not_found, 403 user_disabled.
func (a *API) issueToken(ctx context.Context, c *app.RequestContext) {
	userOp(a, a.d.Accounts.IssueToken)(ctx, c)
}

// revokeTokens handles POST /api/token/revoke → {}: every token of the
// user is refused from now on and the user's sessions close.
func (a *API) revokeTokens(ctx context.Context, c *app.RequestContext) {
	userOp(a, func(ctx context.Context, r account.UserRequest) (struct{}, error) {
		return struct{}{}, a.d.Accounts.RevokeTokens(ctx, r.UserID)
	})(ctx, c)
}
