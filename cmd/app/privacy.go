package app

import (
	"github.com/nexo-im/nexo/gateway/limits"
	"github.com/nexo-im/nexo/gateway/routes"
	"github.com/nexo-im/nexo/services/chat"
	"github.com/nexo-im/nexo/services/group"
	"github.com/nexo-im/nexo/services/privacy"
	"github.com/nexo-im/nexo/services/sync"
	"github.com/nexo-im/nexo/store"
)

// buildPrivacy builds account deletion, export, retention and clearing
// (docs/privacy.md): the routes, the puller's cleared-history bound and
// the retention cleaner (one instance at a time, by lease). The server
// API reads a.privacy, so it runs before buildIntegration. objects reads
// the media of ZIP exports and owned erases a deleted account's own
// objects (both nil when uploads are off).
func (a *App) buildPrivacy(access *sync.Access, members *group.Members, puller *chat.Puller, objects privacy.Media, owned privacy.ObjectEraser) {
	svc := privacy.NewService(privacy.Deps{
		Config: privacy.Config{MaxAge: a.cfg.Retention.MaxAge, EraseDeletedUsers: a.cfg.Retention.EraseDeletedUsers},
		Users:  a.users, Passwords: a.passwords, Tokens: a.tokens, Sessions: hubSessions{a}, Groups: a.groups,
		Keys: store.NewUserKeys(a.rdb, a.keys), Gate: a.dmGate, Attempts: limits.NewAccounts(a.limiter, a.cfg.Limits), Store: store.NewPrivacyRepo(a.db),
		Access: access, Roles: members, Cursors: store.NewCursorRepo(a.db), Log: a.log, Devices: pushDevices{a},
		Media: objects, Objects: owned,
	})
	a.privacy = svc
	puller.WithCleared(svc)
	exports := limits.NewExports(a.limiter, limits.Rule{Rate: a.cfg.Limits.Export.Rate,
		Period: a.cfg.Limits.Export.Period, Burst: a.cfg.Limits.Export.Burst})
	routes.NewPrivacy(svc, exports, a.cfg.HTTP.MaxBodyBytes, a.log).Register(a.server, a.ws)
	a.cleaner = privacy.NewCleaner(svc, store.NewLease(a.rdb, a.keys, "retention"), a.consumerName(),
		privacy.CleanerConfig{Interval: a.cfg.Retention.CleanInterval, Batch: a.cfg.Retention.CleanBatch,
			Pause: a.cfg.Retention.CleanPause, PauseRatio: a.cfg.Retention.CleanPauseRatio}, a.log)
	a.add(component{name: "retention cleaner", run: a.cleaner.Run})
}
