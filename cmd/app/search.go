package app

import (
	"context"

	"github.com/nexo-im/nexo/domain"
	"github.com/nexo-im/nexo/gateway/limits"
	"github.com/nexo-im/nexo/gateway/routes"
	"github.com/nexo-im/nexo/services/search"
	"github.com/nexo-im/nexo/store"
)

// afterSave is the hook the save stage and the synchronous send call once
// messages are saved (workers.AfterSave, chat.AfterSave).
type afterSave interface {
	AfterSave(ctx context.Context, msgs []domain.Message, fresh []bool) error
}

// afterSaves calls each hook in turn; the first error stops it (the save
// is retried, and every hook hears of its messages at least once).
type afterSaves []afterSave

// AfterSave implements afterSave.
func (l afterSaves) AfterSave(ctx context.Context, msgs []domain.Message, fresh []bool) error {
	for _, h := range l {
		if err := h.AfterSave(ctx, msgs, fresh); err != nil {
			return err
		}
	}
	return nil
}

// joinAfter returns the hooks that are set as one (nil when none is).
func joinAfter(hooks ...afterSave) afterSave {
	var l afterSaves
	for _, h := range hooks {
		if h != nil {
			l = append(l, h)
		}
	}
	switch len(l) {
	case 0:
		return nil
	case 1:
		return l[0]
	}
	return l
}

// buildSearch prepares message search when search.enabled: the search
// table (refusing to start on MariaDB without Mroonga), the indexing
// stage fed by the returned save hook, and the service. nil, nil when off.
func (a *App) buildSearch(ctx context.Context) (*search.Service, afterSave, error) {
	if !a.cfg.Search.Enabled {
		return nil, nil, nil
	}
	repo, err := store.NewSearchRepo(ctx, a.db)
	if err != nil {
		return nil, nil, err
	}
	keys := search.NewKeys(a.cfg.Redis.KeyPrefix)
	indexer := search.NewIndexer(a.rdb, keys, repo, a.consumerName(), a.cfg.Search.IndexBatch, a.cfg.Search.IndexWait, a.log)
	if err := indexer.EnsureGroup(ctx); err != nil {
		return nil, nil, err
	}
	a.add(component{name: "search indexer", run: indexer.Run})
	a.log.Info("message search enabled", "backend", repo.Backend())
	return search.NewService(repo, a.cfg.Search.Timeout), search.NewEnqueuer(a.rdb, keys), nil
}

// registerSearch mounts the search routes (nothing when svc is nil).
func (a *App) registerSearch(svc *search.Service) {
	if svc == nil {
		return
	}
	limit := limits.NewSearches(a.limiter, limits.Rule{Rate: a.cfg.Limits.Search.Rate,
		Period: a.cfg.Limits.Search.Period, Burst: a.cfg.Limits.Search.Burst})
	routes.NewSearch(svc, limit, a.cfg.HTTP.MaxBodyBytes, a.log).Register(a.server, a.ws)
}
