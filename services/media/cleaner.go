package media

import (
	"context"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/nexo-im/nexo/domain"
)

// cleanBatch is how many objects one pass deletes at most.
const cleanBatch = 500

// Cleaner deletes, every objects.clean_interval, the objects no message
// references after objects.orphan_ttl (message uploads never sent, and
// multipart uploads never completed), requeues thumbnails whose stage
// died, and refreshes the stored-bytes gauge. One instance at a time runs
// a pass: the pass is taken with SET NX PX on a Redis key for one
// interval, so a pass that ends within its interval never overlaps
// another. Objects carried by a message are never deleted, whatever
// became of the message (recalled, deleted for a user), so another message
// carrying the same object keeps working.
type Cleaner struct {
	s        *Service
	rdb      redis.UniversalClient
	key      string
	instance string
}

// NewCleaner returns the cleaner; key is the Redis key of the pass lease
// (under the deployment's prefix), instance this process's name.
func NewCleaner(s *Service, rdb redis.UniversalClient, key, instance string) *Cleaner {
	return &Cleaner{s: s, rdb: rdb, key: key, instance: instance}
}

// Run runs a pass every interval until ctx ends.
func (c *Cleaner) Run(ctx context.Context) error {
	t := time.NewTicker(c.s.cfg.CleanInterval)
	defer t.Stop()
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

// Pass takes the lease and, if it got it, runs one pass; it returns how
// many objects it deleted (0 and nil when another instance has the pass).
func (c *Cleaner) Pass(ctx context.Context) (int, error) {
	ok, err := c.rdb.SetNX(ctx, c.key, c.instance, c.s.cfg.CleanInterval).Result()
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
			if err := c.s.store.Abort(ctx, o.Key, o.UploadID); err != nil {
				return n, fmt.Errorf("abort %s: %w", o.ID, err)
			}
		}
		for _, k := range []string{o.Key, thumbKey(o.ID)} {
			if err := c.s.store.Delete(ctx, k); err != nil {
				return n, fmt.Errorf("delete %s: %w", k, err)
			}
		}
		if err := c.s.repo.Delete(ctx, o.ID); err != nil {
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
