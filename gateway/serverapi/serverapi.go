// Package serverapi is the API for the app's backend, under /api/: it
// manages users, issues and revokes their tokens, sends messages and
// notifications as any user or as the system, manages groups on behalf of
// users and looks up presence. Every route needs `Authorization: apikey
// <key>` with one of server_api.keys (compared in constant time; list two
// keys while rotating). docs/integration.md is the guide, docs/openapi.yaml
// the reference.
package serverapi

import (
	"context"
	"crypto/subtle"
	"log/slog"
	"strings"

	"github.com/cloudwego/hertz/pkg/app"

	"github.com/nexo-im/nexo/domain"
	"github.com/nexo-im/nexo/gateway/api"
	"github.com/nexo-im/nexo/gateway/routes"
	"github.com/nexo-im/nexo/gateway/wire"
	"github.com/nexo-im/nexo/services/account"
	"github.com/nexo-im/nexo/services/chat"
	"github.com/nexo-im/nexo/services/group"
	"github.com/nexo-im/nexo/services/privacy"
	"github.com/nexo-im/nexo/services/search"
)

// Users finds the recipient of a notification (store.UserRepo).
type Users interface {
	Get(ctx context.Context, id string) (domain.User, error)
}

// Deps are the API's collaborators; all are required.
type Deps struct {
	Keys  []string
	Users Users
	// Accounts serves the user and token routes.
	Accounts *account.Service
	Chat     *chat.Service
	Groups   *group.Service
	// Presence serves GET /api/presence (routes.Presence.API).
	Presence app.HandlerFunc
	// Search serves /api/msg/search, /api/user/search and
	// /api/group/search; nil when search.enabled is off.
	Search *search.Service
	// Privacy serves /api/user/delete (the full account deletion) and
	// /api/user/export; nil falls back to account.Service.DeleteUser and
	// leaves the export out.
	Privacy *privacy.Service
	// SystemUserID is the sender of notifications sent "as the system".
	SystemUserID string
	MaxBody      int
	Log          *slog.Logger
}

// API serves /api/*.
type API struct {
	d    Deps
	keys [][]byte
}

// New returns the API; with no keys every /api/* route answers 404
// not_found (the server API is disabled).
func New(d Deps) *API {
	a := &API{d: d}
	for _, k := range d.Keys {
		a.keys = append(a.keys, []byte(k))
	}
	return a
}

// Register mounts every /api/* route behind the apikey check.
func (a *API) Register(r routes.HTTP) {
	table := []struct {
		method, path string
		h            app.HandlerFunc
	}{
		{"POST", "/api/user/create", a.createUser},
		{"POST", "/api/user/update", a.updateUser},
		{"GET", "/api/user/get", a.getUser},
		{"POST", "/api/user/disable", a.disableUser},
		{"POST", "/api/user/enable", a.enableUser},
		{"POST", "/api/user/delete", a.deleteUser},
		{"POST", "/api/token", a.issueToken},
		{"POST", "/api/token/revoke", a.revokeTokens},
		{"POST", "/api/msg/send", a.sendMessage},
		{"POST", "/api/msg/send_notification", a.sendNotification},
		{"GET", "/api/presence", a.d.Presence},
	}
	g := guarded{r: r, a: a}
	for _, rt := range table {
		g.Route(rt.method, rt.path, rt.h, false)
	}
	a.registerGroups(g)
	if a.d.Privacy != nil {
		g.Route("GET", "/api/user/export", a.exportUser, false)
	}
	if a.d.Search != nil {
		routes.SearchServerAPI(g, a.d.Search, a.actingUser, a.d.Log)
	}
}

// guarded mounts routes on r behind the apikey check.
type guarded struct {
	r routes.HTTP
	a *API
}

// Route mounts h at method and path, unauthenticated by token: the apikey
// check stands in for it.
func (g guarded) Route(method, path string, h app.HandlerFunc, _ bool) {
	a := g.a
	g.r.Route(method, path, func(ctx context.Context, c *app.RequestContext) {
		if len(a.keys) == 0 {
			api.WriteError(ctx, c, a.d.Log, wire.NewError(wire.ReasonNotFound, "the server API is disabled (server_api.keys is empty)"))
			return
		}
		if !a.authorized(c) {
			api.WriteError(ctx, c, a.d.Log, wire.NewError(wire.ReasonUnauthorized, "the server API needs Authorization: apikey <one of server_api.keys>"))
			return
		}
		h(ctx, c)
	}, false)
}

// authorized compares the presented key with every configured key in
// constant time (no early exit, so timing does not tell which key or how
// much of it matched).
func (a *API) authorized(c *app.RequestContext) bool {
	scheme, key, ok := strings.Cut(strings.TrimSpace(string(c.GetHeader("Authorization"))), " ")
	if !ok || !strings.EqualFold(scheme, "apikey") {
		return false
	}
	got := []byte(strings.TrimSpace(key))
	match := 0
	for _, k := range a.keys {
		match |= subtle.ConstantTimeCompare(got, k)
	}
	return match == 1
}

// write answers res or err in the envelope.
func (a *API) write(ctx context.Context, c *app.RequestContext, res any, err error) {
	if err != nil {
		api.WriteError(ctx, c, a.d.Log, err)
		return
	}
	api.WriteOK(c, res)
}
