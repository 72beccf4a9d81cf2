package app

import (
	"context"

	"github.com/redis/go-redis/v9"

	"github.com/nexo-im/nexo/domain"
	"github.com/nexo-im/nexo/gateway/limits"
	"github.com/nexo-im/nexo/gateway/routes"
	"github.com/nexo-im/nexo/services/chat"
	"github.com/nexo-im/nexo/services/search"
	"github.com/nexo-im/nexo/store"
	"github.com/nexo-im/nexo/streams"
)

// afterSave is a hook the save stage calls once messages are saved
// (workers.AfterSave): it returns the entries for later stages' queues
// that the batch's commit adds.
type afterSave interface {
	AfterSave(ctx context.Context, msgs []domain.Message, fresh []bool) ([]streams.Append, error)
}

// afterSaves calls each hook in turn and returns all their entries; the
// first error stops it (the save is retried, and every hook hears of its
// messages at least once).
type afterSaves []afterSave

// AfterSave implements afterSave.
func (l afterSaves) AfterSave(ctx context.Context, msgs []domain.Message, fresh []bool) ([]streams.Append, error) {
	var out []streams.Append
	for _, h := range l {
		apps, err := h.AfterSave(ctx, msgs, fresh)
		if err != nil {
			return nil, err
		}
		out = append(out, apps...)
	}
	return out, nil
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

// syncAfter runs the hooks for the synchronous send (chat.AfterSave),
// which has no commit to carry their entries: it adds them itself, in one
// pipelined round trip.
type syncAfter struct {
	hook afterSave
	rdb  redis.UniversalClient
}

// chatAfter returns hook for the synchronous path (nil when hook is).
func chatAfter(hook afterSave, rdb redis.UniversalClient) chat.AfterSave {
	if hook == nil {
		return nil
	}
	return syncAfter{hook: hook, rdb: rdb}
}

// AfterSave implements chat.AfterSave.
func (s syncAfter) AfterSave(ctx context.Context, msgs []domain.Message, fresh []bool) error {
	apps, err := s.hook.AfterSave(ctx, msgs, fresh)
	if err != nil {
		return err
	}
	return streams.AppendAll(ctx, s.rdb, apps)
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
	return search.NewService(repo, a.cfg.Search.Timeout), search.NewEnqueuer(keys), nil
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
