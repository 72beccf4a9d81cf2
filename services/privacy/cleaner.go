package privacy

import (
	"context"
	"errors"
	"log/slog"
	"time"
)

// Lease is the cleaner's lease (store.Lease): one instance of a cluster
// sweeps at a time.
type Lease interface {
	Acquire(ctx context.Context, holder string, ttl time.Duration) (bool, error)
	Release(ctx context.Context, holder string) error
}

// CleanerConfig paces the cleaner (retention.*).
type CleanerConfig struct {
	// Interval is the time between sweeps.
	Interval time.Duration
	// Batch is the most messages one statement deletes.
	Batch int
	// Pause is the least wait between two batches (0: none).
	Pause time.Duration
	// PauseRatio makes the wait after a batch at least PauseRatio times as
	// long as the batch took, so the cleaner keeps the database busy at
	// most 1/(1+PauseRatio) of the time however slow its deletes are (0:
	// Pause alone). docs/privacy.md, "The cleaner".
	PauseRatio float64
}

// pauseAfter is the wait after a batch that took took: Pause, or
// PauseRatio times took when that is longer.
func (cfg CleanerConfig) pauseAfter(took time.Duration) time.Duration {
	return max(cfg.Pause, time.Duration(float64(took)*cfg.PauseRatio))
}

// Cleaner runs Sweep every Interval on the instance that holds the lease;
// the others wait their turn. The lease lives three intervals (and at
// least a minute), renewed between batches, so a cleaner that dies hands
// over within that time.
type Cleaner struct {
	svc    *Service
	lease  Lease
	holder string
	cfg    CleanerConfig
	log    *slog.Logger
	// swept is signalled after each sweep (tests wait on it).
	swept chan SweepResult
}

// NewCleaner returns the cleaner of svc; holder names this instance in the
// lease.
func NewCleaner(svc *Service, lease Lease, holder string, cfg CleanerConfig, log *slog.Logger) *Cleaner {
	return &Cleaner{svc: svc, lease: lease, holder: holder, cfg: cfg, log: log, swept: make(chan SweepResult, 1)}
}

// Swept delivers the result of each sweep this instance ran; a result
// nobody took is replaced by the next.
func (c *Cleaner) Swept() <-chan SweepResult { return c.swept }

func (c *Cleaner) ttl() time.Duration { return max(3*c.cfg.Interval, time.Minute) }

// Run sweeps until ctx ends, then gives the lease up.
func (c *Cleaner) Run(ctx context.Context) error {
	t := time.NewTicker(c.cfg.Interval)
	defer t.Stop()
	defer func() { _ = c.lease.Release(context.WithoutCancel(ctx), c.holder) }()
	for {
		c.Once(ctx)
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

// Once runs one sweep if this instance holds (or takes) the lease and
// reports whether it swept.
func (c *Cleaner) Once(ctx context.Context) bool {
	ok, err := c.lease.Acquire(ctx, c.holder, c.ttl())
	if err != nil {
		c.log.Warn("retention cleaner: lease", "err", err)
		return false
	}
	if !ok {
		return false
	}
	var batchStart time.Time // zero before the first batch
	hold := func(ctx context.Context) bool {
		if !batchStart.IsZero() {
			// Never so long that the lease, renewed after the wait, lapses.
			if pause := min(c.cfg.pauseAfter(time.Since(batchStart)), c.ttl()/3); pause > 0 {
				t := time.NewTimer(pause)
				select {
				case <-ctx.Done():
					t.Stop()
					return false
				case <-t.C:
				}
			}
		}
		ok, err := c.lease.Acquire(ctx, c.holder, c.ttl())
		batchStart = time.Now()
		return err == nil && ok
	}
	res, err := c.svc.Sweep(ctx, time.Now(), c.cfg.Batch, hold)
	if err != nil && !errors.Is(err, context.Canceled) {
		c.log.Warn("retention cleaner: sweep", "deleted", res.Deleted, "err", err)
	}
	if res.Deleted > 0 {
		c.log.Info("retention cleaner: expired messages deleted", "deleted", res.Deleted)
	}
	select {
	case <-c.swept:
	default:
	}
	c.swept <- res
	return true
}
