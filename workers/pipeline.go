package workers

import (
	"context"
	"log/slog"
	"time"

	"github.com/redis/go-redis/v9"
	"golang.org/x/sync/errgroup"

	"github.com/nexo-im/nexo/configs"
	"github.com/nexo-im/nexo/streams"
)

// Stage handles batches of one shard.
type Stage interface {
	Handle(ctx context.Context, shard int, batch []redis.XMessage) error
}

// Pipeline runs the save and deliver stages on every shard: one consumer per
// (stage, shard), each processing its shard in stream order.
type Pipeline struct {
	rdb     redis.UniversalClient
	keys    streams.Keys
	cfg     configs.Streams
	save    configs.Save
	name    string
	stages  map[string]Stage
	log     *slog.Logger
	started chan struct{}
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
		if err := streams.EnsureGroup(ctx, p.rdb, p.keys.ToSave(shard), streams.GroupSave); err != nil {
			return err
		}
		if err := streams.EnsureGroup(ctx, p.rdb, p.keys.ToDeliver(shard), streams.GroupDeliver); err != nil {
			return err
		}
	}
	return nil
}

// Run consumes until ctx is cancelled, then lets every consumer finish the
// batch in hand (bounded by streams.block plus the drain timeout) and
// returns. It acknowledges nothing unfinished.
func (p *Pipeline) Run(ctx context.Context) error {
	if err := p.EnsureGroups(ctx); err != nil {
		if ctx.Err() != nil {
			return nil // stopped before it started: nothing was taken
		}
		return err
	}
	g, gctx := errgroup.WithContext(ctx)
	for shard := 0; shard < p.keys.Shards(); shard++ {
		for group, stage := range p.stages {
			stream := p.keys.ToSave(shard)
			count := p.save.BatchSize
			if group == streams.GroupDeliver {
				stream, count = p.keys.ToDeliver(shard), p.cfg.ReadCount
			}
			c := streams.NewConsumer(p.rdb, streams.ConsumerConfig{
				Stream: stream, Group: group, Consumer: p.name, Count: count, Block: p.cfg.Block,
				ClaimMinIdle: p.cfg.ClaimMinIdle, ClaimEvery: min(p.cfg.ClaimMinIdle/4, time.Second),
				TrimInterval: p.cfg.TrimInterval, BackoffMin: p.save.RetryBackoff, BackoffMax: p.save.RetryBackoffMax,
				BatchWait: p.batchWait(group),
			}, p.log)
			shard, stage := shard, stage
			g.Go(func() error {
				return c.Run(gctx, func(ctx context.Context, batch []redis.XMessage) error {
					return stage.Handle(ctx, shard, batch)
				})
			})
		}
	}
	close(p.started)
	return g.Wait()
}

func (p *Pipeline) batchWait(group string) time.Duration {
	if group == streams.GroupSave {
		return p.save.BatchWait
	}
	return 0
}

// Started is closed once every consumer has been launched.
func (p *Pipeline) Started() <-chan struct{} { return p.started }
