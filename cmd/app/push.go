package app

import (
	"context"
	"fmt"
	"path/filepath"

	"github.com/nexo-im/nexo/configs"
	"github.com/nexo-im/nexo/gateway/routes"
	"github.com/nexo-im/nexo/services/group"
	"github.com/nexo-im/nexo/services/push"
	"github.com/nexo-im/nexo/store"
)

// pushHook is the built-in push's save hook (push.enabled): the saved
// messages go to the resolve stage's stream. nil when off.
func (a *App) pushHook() afterSave {
	if !a.pushActive() {
		return nil
	}
	return push.NewEnqueuer(push.NewKeys(a.cfg.Redis.KeyPrefix))
}

// pushActive: push.enabled and a provider is configured (the embedded
// mode always has Web Push). Without a provider the device routes answer
// push_provider_unavailable and no stage runs.
func (a *App) pushActive() bool {
	c := a.cfg.Push
	return c.Enabled && (c.FCM.CredentialsFile != "" || c.APNs.KeyFile != "" || c.WebPush.VAPIDPublicKey != "" || a.embedded)
}

// buildPush wires the built-in push (docs/push.md): the device table and
// routes, the resolve stage, and a send stage per configured provider.
// The embedded mode generates a VAPID pair and keeps it beside its
// database, so a browser can subscribe without configuration.
func (a *App) buildPush(ctx context.Context, members *group.Members, convs *store.ConversationRepo) error {
	cfg := a.cfg.Push
	if !cfg.Enabled {
		return nil
	}
	repo, err := store.NewPushDeviceRepo(ctx, a.db)
	if err != nil {
		return err
	}
	if cfg.WebPush.VAPIDPublicKey == "" && a.embedded {
		pub, priv, err := push.LoadOrCreateVAPID(filepath.Dir(a.cfg.SQLite.Path))
		if err != nil {
			return err
		}
		cfg.WebPush.VAPIDPublicKey, cfg.WebPush.VAPIDPrivateKey = pub, priv
	}
	providers := map[string]push.Provider{}
	if cfg.FCM.CredentialsFile != "" {
		p, err := push.NewFCM(ctx, cfg.FCM, nil)
		if err != nil {
			return err
		}
		providers[push.ProviderFCM] = p
	}
	if cfg.APNs.KeyFile != "" {
		p, err := push.NewAPNs(cfg.APNs, nil)
		if err != nil {
			return err
		}
		providers[push.ProviderAPNs] = p
	}
	if cfg.WebPush.VAPIDPublicKey != "" {
		providers[push.ProviderWebPush] = push.NewWebPush(cfg.WebPush, nil)
	}
	for _, w := range a.cfg.Warnings() {
		a.log.Warn(w)
	}
	enabled := map[string]bool{}
	for name := range providers {
		enabled[name] = true
	}
	a.push = push.NewService(repo, cfg, enabled, cfg.WebPush.VAPIDPublicKey)
	routes.NewPush(a.push, a.cfg.HTTP.MaxBodyBytes, a.log).Register(a.server)
	if !a.pushActive() {
		return nil
	}
	keys := push.NewKeys(a.cfg.Redis.KeyPrefix)
	resolver := push.NewResolver(push.ResolveDeps{Redis: a.rdb, Keys: keys, Config: cfg, Consumer: a.consumerName(),
		Presence: a.presence, Members: members, Convs: convs, Nicknames: a.users, Devices: repo, Enabled: enabled, Log: a.log})
	if err := resolver.EnsureGroup(ctx); err != nil {
		return err
	}
	a.add(component{name: "push resolver", run: resolver.Run})
	metrics := push.NewMetrics(a.metrics)
	for _, name := range push.Providers {
		p, ok := providers[name]
		if !ok {
			continue
		}
		s := push.NewSender(push.SenderDeps{Redis: a.rdb, Keys: keys, Config: cfg, Name: name, Concurrency: concurrencyOf(cfg, name),
			Provider: p, Gone: repo, Metrics: metrics, Consumer: a.consumerName(), Log: a.log})
		if err := s.EnsureGroup(ctx); err != nil {
			return err
		}
		a.add(component{name: "push sender " + name, run: s.Run})
	}
	a.log.Info("built-in push enabled", "providers", fmt.Sprint(push.Providers), "configured", fmt.Sprint(enabled))
	return nil
}

func concurrencyOf(cfg configs.Push, provider string) int {
	switch provider {
	case push.ProviderFCM:
		return cfg.FCM.Concurrency
	case push.ProviderAPNs:
		return cfg.APNs.Concurrency
	}
	return cfg.WebPush.Concurrency
}

// pushDevices adapts the push service, built after the account service, to
// account.Devices.
type pushDevices struct{ a *App }

// LoggedOut implements account.Devices.
func (p pushDevices) LoggedOut(ctx context.Context, userID string, platformID int) error {
	if p.a.push == nil {
		return nil
	}
	return p.a.push.LoggedOut(ctx, userID, platformID)
}

// ForgetUser implements account.Devices.
func (p pushDevices) ForgetUser(ctx context.Context, userID string) error {
	if p.a.push == nil {
		return nil
	}
	return p.a.push.ForgetUser(ctx, userID)
}

// RemoveUserDevices implements privacy.Devices (account deletion).
func (p pushDevices) RemoveUserDevices(ctx context.Context, userID string) error {
	return p.ForgetUser(ctx, userID)
}
