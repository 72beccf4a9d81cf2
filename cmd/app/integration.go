package app

import (
	"context"

	"github.com/cloudwego/hertz/pkg/app"
	"github.com/hertz-contrib/cors"

	"github.com/nexo-im/nexo/configs"
	"github.com/nexo-im/nexo/gateway/auth"
	"github.com/nexo-im/nexo/gateway/routes"
	"github.com/nexo-im/nexo/gateway/serverapi"
	"github.com/nexo-im/nexo/gateway/ws"
	"github.com/nexo-im/nexo/services/chat"
	"github.com/nexo-im/nexo/services/group"
	"github.com/nexo-im/nexo/services/presence"
	"github.com/nexo-im/nexo/services/webhook"
	"github.com/nexo-im/nexo/store"
	"github.com/nexo-im/nexo/workers"
)

// buildExternalJWT lets the verifier accept app-signed tokens
// (auth.external_jwt); the JWKS cache lives until the process stops.
func (a *App) buildExternalJWT() error {
	cfg := a.cfg.Auth.ExternalJWT
	if !cfg.Enabled {
		return nil
	}
	ctx, cancel := context.WithCancel(context.Background())
	ext, err := auth.NewExternal(ctx, cfg, a.tokens, a.users, a.log)
	if err != nil {
		cancel()
		return err
	}
	a.add(component{name: "jwks cache", stop: func(context.Context) error { cancel(); return nil }})
	a.verifier.UseExternal(ext)
	return nil
}

// corsMiddleware answers cross-origin requests and preflights for
// http.cors.allowed_origins, else ws.allowed_origins (one default for both
// checks); with neither set it is nil and browsers keep to the same origin.
func corsMiddleware(cfg configs.Config) app.HandlerFunc {
	c := cfg.HTTP.CORS
	origins := c.AllowedOrigins
	if len(origins) == 0 {
		origins = cfg.WS.AllowedOrigins
	}
	if len(origins) == 0 {
		return nil
	}
	cc := cors.Config{AllowMethods: c.AllowedMethods, AllowHeaders: c.AllowedHeaders, MaxAge: c.MaxAge, AllowWebSockets: true}
	for _, o := range origins {
		if o == "*" {
			cc.AllowAllOrigins = true
		}
	}
	if !cc.AllowAllOrigins {
		cc.AllowOrigins = origins
	}
	return cors.New(cc)
}

// hubSessions adapts the WebSocket hub to account.Sessions.
type hubSessions struct{ a *App }

// Disconnect ends the sessions on every instance (the cluster relay).
func (h hubSessions) Disconnect(userID string, platformID int, jti string) {
	h.a.relay.RevokeSession(context.Background(), userID, platformID, jti)
}

// webhooks is what buildWebhooks made; every field is nil when its
// events are off.
type webhooks struct {
	emitter *webhook.Emitter
	before  *webhook.BeforeSend
	client  *webhook.Client
	async   bool // an asynchronous event is enabled
}

func (h webhooks) workerAfter() workers.AfterSave {
	if h.emitter == nil {
		return nil
	}
	return h.emitter
}

func (h webhooks) beforeSend() chat.SendHook {
	if h.before == nil {
		return nil
	}
	return h.before
}

// buildWebhooks builds the before_send hook and the event emitter and
// registers the deliverer (docs/webhooks.md).
func (a *App) buildWebhooks() webhooks {
	cfg := a.cfg.Webhooks
	var h webhooks
	if len(cfg.Events) == 0 {
		return h
	}
	h.client = webhook.NewClient(cfg.Secret, a.metrics)
	if url := cfg.EventURL(configs.EventBeforeSend); url != "" {
		h.before = webhook.NewBeforeSend(h.client, url, cfg.BeforeSend, a.metrics, a.log)
	}
	for _, ev := range cfg.Events {
		h.async = h.async || (ev != configs.EventBeforeSend && cfg.EventURL(ev) != "")
	}
	if !h.async {
		return h
	}
	keys := webhook.NewKeys(a.cfg.Redis.KeyPrefix)
	h.emitter = webhook.NewEmitter(a.rdb, keys, a.member.Self().ID, cfg, nil, a.log)
	d := webhook.NewDeliverer(a.rdb, keys, a.consumerName(), cfg, h.client, a.metrics, a.log)
	a.add(component{name: "webhook deliverer", run: d.Run})
	return h
}

// buildIntegration wires presence, typing, offline push and the server
// API.
func (a *App) buildIntegration(hooks webhooks, members *group.Members, convs *store.ConversationRepo) {
	var events presence.Events
	if hooks.emitter != nil {
		events = hooks.emitter
		if hooks.emitter.Enabled(configs.EventOfflinePush) {
			off := webhook.NewOfflinePush(webhook.OfflineDeps{Config: a.cfg.Webhooks.OfflinePush, Presence: a.presence,
				Members: members, Convs: convs, Nicknames: a.users, Log: a.log})
			off.SetEmitter(hooks.emitter)
			hooks.emitter.SetOffline(off)
			a.add(component{name: "offline push", run: off.Run})
		}
	}
	a.realtime = presence.NewRealtime(presence.RealtimeDeps{Store: a.presence, Events: events, Members: members,
		Pusher: ws.NewPushes(a.relay, a.log), DM: a.dmGate, Refresh: a.cfg.WS.PingInterval, TTL: a.cfg.WS.PresenceTTL, Log: a.log})
	a.add(component{name: "presence refresh", run: a.realtime.Run, stop: a.realtime.Close})
	pres := routes.NewPresence(presence.NewService(a.presence, store.NewContacts(a.db)), a.realtime, a.log)
	pres.Register(a.server, a.ws)

	serverapi.New(serverapi.Deps{
		Keys: a.cfg.ServerAPI.Keys, Users: a.users, Accounts: a.accounts,
		Chat: a.chat, Groups: a.groups.ForApp(), Presence: pres.API, Search: a.search, Reports: a.reports,
		Privacy:      a.privacy,
		SystemUserID: "system", MaxBody: a.cfg.HTTP.MaxBodyBytes, Log: a.log,
	}).Register(a.server)
}
