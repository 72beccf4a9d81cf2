package app

import (
	"context"
	"fmt"

	"github.com/nexo-im/nexo/configs"
	"github.com/nexo-im/nexo/gateway/limits"
	"github.com/nexo-im/nexo/gateway/routes"
	"github.com/nexo-im/nexo/services/chat"
	"github.com/nexo-im/nexo/services/media"
	"github.com/nexo-im/nexo/services/privacy"
	"github.com/nexo-im/nexo/store"
)

// laterPuller lets the object service, built before the message puller,
// read messages once the puller exists (set before any route is served).
type laterPuller struct{ p *chat.Puller }

// PullBySeqs implements media.Messages.
func (l *laterPuller) PullBySeqs(ctx context.Context, userID, conversationID string, seqs []int64) (chat.PullResult, error) {
	return l.p.PullBySeqs(ctx, userID, conversationID, seqs)
}

// mediaParts is what buildMedia wires: the service (nil when uploads are
// off), the local backend when in use, and the puller to set later.
type mediaParts struct {
	svc   *media.Service
	local *media.Local
	msgs  *laterPuller
}

// buildMedia prepares uploads when a backend is in effect
// (configs.ObjectsBackend): the storage, the service, its thumbnail stage
// and cleaner. Its AfterSave records which messages carry which objects.
func (a *App) buildMedia(ctx context.Context) (mediaParts, error) {
	var parts mediaParts
	var st media.Storage
	switch a.cfg.Objects.Backend {
	case "":
		a.log.Info("uploads off: objects.backend is not set (docs/media.md)")
		return parts, nil
	case configs.ObjectsBackendLocal:
		local, err := media.NewLocal(a.cfg.Objects.Local.Dir, a.cfg.Objects.PublicURL, media.NewSigner([]byte(a.cfg.JWT.Secret), nil))
		if err != nil {
			return parts, err
		}
		st, parts.local = local, local
	case configs.ObjectsBackendS3:
		s3, err := media.NewS3(ctx, a.cfg.Objects.S3)
		if err != nil {
			return parts, err
		}
		st = s3
	default:
		return parts, fmt.Errorf("objects.backend %q", a.cfg.Objects.Backend)
	}
	parts.msgs = &laterPuller{}
	parts.svc = media.NewService(media.Deps{Config: a.cfg.Objects, Repo: store.NewObjectRepo(a.db), Storage: st,
		Messages: parts.msgs, Registry: a.metrics, Log: a.log})
	a.add(component{name: "thumbnails", run: parts.svc.Thumbnails().Run})
	cleaner := media.NewCleaner(parts.svc, store.NewLease(a.rdb, a.keys, "objects-cleaner"), a.consumerName())
	a.add(component{name: "object cleaner", run: cleaner.Run})
	a.log.Info("uploads on", "backend", a.cfg.Objects.Backend, "dir", a.cfg.Objects.Local.Dir)
	return parts, nil
}

// afterSave is the save hook of the object service (nil when off).
func (p mediaParts) afterSave() afterSave {
	if p.svc == nil {
		return nil
	}
	return p.svc
}

// objects is the send check of object references (nil when off).
func (p mediaParts) objects() chat.Objects {
	if p.svc == nil {
		return nil
	}
	return p.svc
}

// exportMedia is the object reader of ZIP exports (nil when off).
func (p mediaParts) exportMedia() privacy.Media {
	if p.svc == nil {
		return nil
	}
	return p.svc
}

// ownerObjects erases a deleted account's own objects (nil when off).
func (p mediaParts) ownerObjects() privacy.ObjectEraser {
	if p.svc == nil {
		return nil
	}
	return p.svc
}

// registerMedia mounts the object routes once the puller exists.
func (a *App) registerMedia(p mediaParts, puller *chat.Puller) {
	if p.svc == nil {
		return
	}
	p.msgs.p = puller
	limit := limits.NewUploads(a.limiter, limits.Rule{Rate: a.cfg.Objects.Upload.Rate,
		Period: a.cfg.Objects.Upload.Period, Burst: a.cfg.Objects.Upload.Burst})
	routes.NewMedia(p.svc, p.local, limit, a.cfg.HTTP.MaxBodyBytes, a.log).Register(a.server)
}

// maxUploadBody is the largest request body an upload route takes: a
// direct upload or a local part, with room for the multipart framing.
func maxUploadBody(cfg *configs.Config) int {
	if cfg.Objects.Backend == "" {
		return 0
	}
	return int(max(cfg.Objects.MaxDirectBytes, cfg.Objects.PartSize)) + 1<<20
}
