package streams

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"

	"github.com/nexo-im/nexo/domain"
)

// AcceptOption changes how an Accepter works (NewAccepter).
type AcceptOption func(*acceptOptions)

type acceptOptions struct {
	fence       bool
	replicas    int
	waitTimeout time.Duration
	lookup      SavedLookup
	log         *slog.Logger
	reg         prometheus.Registerer
	lostGrace   time.Duration
}

// WithoutFence turns the run_id fence off. Only for a Redis that cannot
// fail over or restart with old data and lacks INFO in scripts: the
// embedded in-process server.
func WithoutFence() AcceptOption { return func(o *acceptOptions) { o.fence = false } }

// WithReplicas makes every two-phase accept wait, on the connection that ran
// the accept script, for n replicas to acknowledge its writes (Redis WAIT n
// timeout) before ACK(accepted) (two_phase.accept_replicas). When fewer
// replicas acknowledge in time the accept returns domain.ErrServerBusy
// (the client retries; the retry finds the original). n = 0 waits for none.
func WithReplicas(n int, timeout time.Duration) AcceptOption {
	return func(o *acceptOptions) { o.replicas, o.waitTimeout = n, timeout }
}

// SavedLookup finds saved messages by sender and client_msg_id, many in
// one query (store.MessageRepo); a key with none saved is absent.
type SavedLookup interface {
	ByClientMsgIDs(ctx context.Context, keys []domain.ClientMsgKey) (map[domain.ClientMsgKey]domain.Message, error)
}

// WithLostCheck turns on the lost-message check (see lostCheck): when the
// Redis server answering for a shard changes, every message this process
// accepted there shortly before is looked up, and one whose accept did not
// survive on the new server and that is not saved after grace is counted
// (nexo_accept_lost_total on reg) and logged, one line per message.
func WithLostCheck(lookup SavedLookup, log *slog.Logger, reg prometheus.Registerer, grace time.Duration) AcceptOption {
	return func(o *acceptOptions) { o.lookup, o.log, o.reg, o.lostGrace = lookup, log, reg, grace }
}

// run executes the accept script (pipelined with concurrent accepts by the
// batcher); with replicas and an appending accept it
// pipelines WAIT after the script on the same connection (in a cluster, a
// connection to the master of the shard's slot), because WAIT counts the
// replication of the calling connection's writes only.
func (a *Accepter) run(ctx context.Context, keys []string, args []any, appending bool) ([]string, error) {
	if a.opt.replicas <= 0 || !appending {
		res, err := a.batch.run(ctx, keys, args)
		return res, classify("accept", err)
	}
	var conn redis.Cmdable = a.rdb
	if cc, ok := a.rdb.(*redis.ClusterClient); ok {
		node, err := cc.MasterForKey(ctx, keys[0])
		if err != nil {
			return nil, classify("accept: master of shard", err)
		}
		conn = node
	}
	for attempt := 0; ; attempt++ {
		var script *redis.Cmd
		var wait *redis.Cmd
		_, err := conn.Pipelined(ctx, func(p redis.Pipeliner) error {
			script = acceptScript.EvalSha(ctx, p, keys, args...)
			wait = p.Do(ctx, "WAIT", a.opt.replicas, a.opt.waitTimeout.Milliseconds())
			return nil
		})
		if err != nil && attempt == 0 && redis.HasErrorPrefix(script.Err(), "NOSCRIPT") {
			if err := acceptScript.Load(ctx, conn).Err(); err != nil {
				return nil, classify("accept: load script", err)
			}
			continue
		}
		if err := script.Err(); err != nil {
			if cc, ok := a.rdb.(*redis.ClusterClient); ok && strings.HasPrefix(err.Error(), "MOVED ") {
				cc.ReloadState(ctx) // the slot moved since MasterForKey: next send finds the new master
				return nil, fmt.Errorf("accept: %w: %w", ErrRedisUnavailable, err)
			}
			return nil, classify("accept", err)
		}
		res, err := script.StringSlice()
		if err != nil {
			return nil, classify("accept", err)
		}
		if n, err := wait.Int64(); err != nil || n < int64(a.opt.replicas) {
			if len(res) > 0 && res[0] == "ok" {
				return nil, fmt.Errorf("accept: %w: %d of %d replica(s) acknowledged within %s (%v)",
					domain.ErrServerBusy, n, a.opt.replicas, a.opt.waitTimeout, err)
			}
		}
		return res, nil
	}
}
