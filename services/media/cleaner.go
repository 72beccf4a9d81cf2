package media

import (
	"context"
	"fmt"
	"time"

	"github.com/nexo-im/nexo/domain"
)

// cleanBatch is how many objects one pass deletes at most.
const cleanBatch = 500

// Cleaner deletes, every objects.clean_interval, the objects no message
// references after objects.orphan_ttl (message uploads never sent, and
// multipart uploads never completed), requeues thumbnails whose stage
// died, and refreshes the stored-bytes gauge. One instance of a cluster at
// a time runs passes: the one holding the lease, renewed at every pass
// for two intervals, so another takes over when the holder dies. Objects
// carried by a message are never deleted, whatever became of the message
// (recalled, deleted for a user), so another message carrying the same
// object keeps working.
type Cleaner struct {
	s        *Service
	lease    Lease
	instance string
}

// Lease is the cleaner's lease (store.Lease): Acquire takes it when free
// and renews it for its holder.
type Lease interface {
	Acquire(ctx context.Context, holder string, ttl time.Duration) (bool, error)
	Release(ctx context.Context, holder string) error
}

// NewCleaner returns the cleaner; instance is this process's name.
func NewCleaner(s *Service, lease Lease, instance string) *Cleaner {
	return &Cleaner{s: s, lease: lease, instance: instance}
}

// Run runs a pass every interval until ctx ends.
func (c *Cleaner) Run(ctx context.Context) error {
	t := time.NewTicker(c.s.cfg.CleanInterval)
	defer t.Stop()
	defer func() { _ = c.lease.Release(context.WithoutCancel(ctx), c.instance) }()
	for {
		if _, err := c.Pass(ctx); err != nil && ctx.Err() == nil {
			c.s.log.Warn("object cleaner", "err", err)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

// Pass takes or renews the lease and, holding it, runs one pass; it
// returns how many objects it deleted (0 and nil when another instance
// holds the lease).
func (c *Cleaner) Pass(ctx context.Context) (int, error) {
	ok, err := c.lease.Acquire(ctx, c.instance, 2*c.s.cfg.CleanInterval)
	if err != nil || !ok {
		return 0, err
	}
	return c.clean(ctx)
}

func (c *Cleaner) clean(ctx context.Context) (int, error) {
	now := c.s.now()
	orphans, err := c.s.repo.Orphans(ctx, now.Add(-c.s.cfg.OrphanTTL).UnixMilli(), cleanBatch)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, o := range orphans {
		kind := "orphan"
		if o.State == domain.ObjectUploading {
			kind = "upload"
		}
		if err := c.s.remove(ctx, o); err != nil {
			return n, err
		}
		c.s.metrics.cleaned.WithLabelValues(kind).Inc()
		n++
	}
	pending, err := c.s.repo.PendingThumbs(ctx, now.Add(-time.Minute).UnixMilli(), cleanBatch)
	if err != nil {
		return n, err
	}
	for _, o := range pending {
		c.s.thumbs.enqueue(o)
	}
	if total, err := c.s.repo.TotalBytes(ctx); err == nil {
		c.s.metrics.stored.Set(float64(total))
	}
	return n, nil
}

// remove deletes o for good: its multipart upload if one is in progress,
// its bytes and thumbnail, then its row and references (the row last, so
// a failure part-way leaves a row the next pass finds again).
func (s *Service) remove(ctx context.Context, o domain.Object) error {
	if o.State == domain.ObjectUploading {
		if err := s.store.Abort(ctx, o.Key, o.UploadID); err != nil {
			return fmt.Errorf("abort %s: %w", o.ID, err)
		}
	}
	for _, k := range []string{o.Key, thumbKey(o.ID)} {
		if err := s.store.Delete(ctx, k); err != nil {
			return fmt.Errorf("delete %s: %w", k, err)
		}
	}
	return s.repo.Delete(ctx, o.ID)
}

// EraseOwner deletes every object of owner that no message carries —
// avatars, uploads never sent, multipart uploads in progress — with its
// bytes and thumbnail, cleanBatch at a time, and returns how many it
// deleted. Account deletion calls it (docs/privacy.md): objects that
// messages carry stay with those messages, and go when the messages go
// (retention, retention.erase_deleted_users) through the cleaner.
func (s *Service) EraseOwner(ctx context.Context, owner string) (int, error) {
	n := 0
	for {
		objs, err := s.repo.Uncarried(ctx, owner, cleanBatch)
		if err != nil {
			return n, err
		}
		for _, o := range objs {
			if err := s.remove(ctx, o); err != nil {
				return n, err
			}
			s.metrics.cleaned.WithLabelValues("erased").Inc()
			n++
		}
		if len(objs) < cleanBatch {
			return n, nil
		}
	}
}
