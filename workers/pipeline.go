package workers

import (
	"context"
	"log/slog"
	"slices"
	"time"

	"github.com/redis/go-redis/v9"
	"golang.org/x/sync/errgroup"

	"github.com/nexo-im/nexo/configs"
	"github.com/nexo-im/nexo/streams"
)

// Stage handles batches of one shard (a streams.Handler per shard).
type Stage interface {
	Handle(ctx context.Context, shard int, batch []redis.XMessage) error
}

// DeadLetterHooks is a Stage with its own part in dead-lettering (the
// save stage): see streams.DeadLetters' Prepare and Parked.
type DeadLetterHooks interface {
	PrepareDead(ctx context.Context, shard int, dead []streams.Dead, c *streams.Commit) error
	Parked(ctx context.Context, shard int, dead []streams.Dead)
}

// ShardStarter is a Stage that hears each time a shard's consumers start
// on this instance (DeliverHandler: the save stage forwards through
// to_deliver until the deliver stage has caught up).
type ShardStarter interface{ ShardStarted(shard int) }

// Pipeline runs the save and deliver stages: one consumer per (stage,
// shard), each processing its shard in stream order — on every shard, or,
// with UseOwnership, on the shards this instance holds leases for.
type Pipeline struct {
	rdb     redis.UniversalClient
	keys    streams.Keys
	cfg     configs.Streams
	save    configs.Save
	name    string
	stages  map[string]Stage
	log     *slog.Logger
	started chan struct{}
	// own, when set (UseOwnership), runs only the shards this instance
	// holds a lease for; nil runs every shard unfenced (one process alone:
	// the embedded default, tests).
	own   *Ownership
	owner *owner
}

// NewPipeline returns a pipeline over the given stages. consumer is the
// stable consumer name of this process (streams.consumer_name or the host
// name): a restart under the same name resumes its own pending entries at once.
func NewPipeline(rdb redis.UniversalClient, keys streams.Keys, cfg configs.Streams, save configs.Save,
	consumer string, saveStage, deliverStage Stage, log *slog.Logger) *Pipeline {
	return &Pipeline{
		rdb: rdb, keys: keys, cfg: cfg, save: save, name: consumer, log: log, started: make(chan struct{}),
		stages: map[string]Stage{streams.GroupSave: saveStage, streams.GroupDeliver: deliverStage},
	}
}

// EnsureGroups creates every stream and consumer group, so entries accepted
// before the stages first run are kept for them.
func (p *Pipeline) EnsureGroups(ctx context.Context) error {
	for shard := 0; shard < p.keys.Shards(); shard++ {
		if err := streams.EnsureGroup(ctx, p.rdb, p.keys.ToSave(shard), p.keys.SaveGroup()); err != nil {
			return err
		}
		if err := streams.EnsureGroup(ctx, p.rdb, p.keys.ToDeliver(shard), p.keys.DeliverGroup()); err != nil {
			return err
		}
	}
	return nil
}

// UseOwnership makes Run take shard leases (see Ownership) instead of
// running every shard. Call it before Run.
func (p *Pipeline) UseOwnership(o Ownership) {
	if o.Interval <= 0 {
		o.Interval = time.Second
	}
	if o.TTL < 2*o.Interval {
		o.TTL = 3 * o.Interval
	}
	if o.Self == "" {
		o.Self = p.name
	}
	p.own, p.owner = &o, newOwner()
}

// Run consumes until ctx is cancelled, then lets every consumer finish the
// batch in hand (bounded by streams.block plus the drain timeout) and
// returns. It acknowledges nothing unfinished. With ownership it runs the
// shards it holds leases for and gives the leases back on the way out.
func (p *Pipeline) Run(ctx context.Context) error {
	if p.own != nil {
		// Release waits for this, whichever way Run ends (even before it
		// took anything).
		defer close(p.owner.stopped)
	}
	if err := p.EnsureGroups(ctx); err != nil {
		if ctx.Err() != nil {
			return nil // stopped before it started: nothing was taken
		}
		return err
	}
	if p.own != nil {
		return p.runOwned(ctx)
	}
	g, gctx := errgroup.WithContext(ctx)
	for shard := 0; shard < p.keys.Shards(); shard++ {
		g.Go(func() error { return p.runShard(gctx, shard, false) })
	}
	g.Go(func() error { p.trimDead(gctx); return nil })
	close(p.started)
	return g.Wait()
}

// trimDead bounds every shard's dead-letter stream each
// streams.trim_interval: streams.dead_max_len entries and
// streams.dead_max_age of age. Any instance may trim; trimming twice is
// harmless.
func (p *Pipeline) trimDead(ctx context.Context) {
	if p.cfg.TrimInterval <= 0 || p.cfg.DeadMaxLen <= 0 && p.cfg.DeadMaxAge <= 0 {
		return
	}
	tick := time.NewTicker(p.cfg.TrimInterval)
	defer tick.Stop()
	for {
		for shard := 0; shard < p.keys.Shards(); shard++ {
			if err := streams.TrimDead(ctx, p.rdb, p.keys.Dead(shard), p.cfg.DeadMaxLen, p.cfg.DeadMaxAge); err != nil && ctx.Err() == nil {
				p.log.Debug("dead-letter trim failed", "err", err)
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// runShard runs shard's save and deliver consumers until ctx ends or one
// of them is fenced out (then the other stops too). takeOver: the shard
// was just leased, so entries pending on other consumers are claimed at
// once and dead consumers are pruned.
func (p *Pipeline) runShard(ctx context.Context, shard int, takeOver bool) error {
	for _, stage := range p.stages {
		if s, ok := stage.(ShardStarter); ok {
			s.ShardStarted(shard)
		}
	}
	g, gctx := errgroup.WithContext(ctx)
	for name, stage := range p.stages {
		stream, group, count := p.keys.ToSave(shard), p.keys.SaveGroup(), p.save.BatchSize
		// The save stage fails a row the database refuses on its own: it
		// is retried save.max_attempts times. The deliver stage fails
		// only malformed entries on their own (dead-lettered at once): a
		// failed push retries its batch until it goes through, as a
		// deliver-first message is not saved yet, backing off by
		// streams.deliver_retry_backoff.
		retry := streams.RetryPolicy{MaxAttempts: p.save.MaxAttempts, Backoff: p.save.RetryBackoff, BackoffMax: p.save.RetryBackoffMax}
		if name == streams.GroupDeliver {
			stream, group, count = p.keys.ToDeliver(shard), p.keys.DeliverGroup(), p.cfg.ReadCount
			retry = streams.RetryPolicy{Backoff: p.cfg.DeliverRetryBackoff, BackoffMax: p.cfg.DeliverRetryBackoffMax}
		}
		cfg := streams.ConsumerConfig{
			Stream: stream, Group: group, Consumer: p.name, Count: count, Block: p.cfg.Block,
			ClaimMinIdle: p.cfg.ClaimMinIdle, ClaimEvery: min(p.cfg.ClaimMinIdle/4, time.Second),
			TrimInterval: p.cfg.TrimInterval, Retry: retry, DeadLetter: p.deadLetters(stage, shard, stream, group),
			TakeOver: takeOver,
		}
		if p.own != nil && p.own.Self == p.name {
			// Consumers are named after their instances: one not live is dead.
			cfg.Dead = func(name string) bool { return !slices.Contains(p.live(), name) }
			cfg.PruneEvery = max(10*p.own.Interval, p.cfg.ClaimMinIdle)
		}
		c := streams.NewConsumer(p.rdb, cfg, p.log.With("shard", shard))
		g.Go(func() error {
			return c.Run(gctx, func(ctx context.Context, batch []redis.XMessage) error {
				return stage.Handle(ctx, shard, batch)
			})
		})
	}
	return g.Wait()
}

// deadLetters is the dead-letter path of a stage's consumer on shard: the
// shard's dead-letter stream, capped at streams.dead_max_len entries and
// streams.dead_max_body_bytes of body, with the stage's hooks.
func (p *Pipeline) deadLetters(stage Stage, shard int, stream, group string) *streams.DeadLetters {
	d := &streams.DeadLetters{Redis: p.rdb, Input: stream, Group: group, Stream: p.keys.Dead(shard),
		MaxLen: p.cfg.DeadMaxLen, MaxBody: p.cfg.DeadMaxBodyBytes}
	if hooks, ok := stage.(DeadLetterHooks); ok {
		d.Prepare = func(ctx context.Context, dead []streams.Dead, c *streams.Commit) error {
			return hooks.PrepareDead(ctx, shard, dead, c)
		}
		d.Parked = func(ctx context.Context, dead []streams.Dead) { hooks.Parked(ctx, shard, dead) }
	}
	return d
}

// Started is closed once every consumer has been launched.
func (p *Pipeline) Started() <-chan struct{} { return p.started }
