package streams

import (
	"context"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"

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
	instance    string
	perfLog     *slog.Logger
}

// WithInstanceID has every stream entry the accept step appends carry id
// (cluster.instance_id) in its instance_id field, for operators reading
// the streams and dead letters; no stage reads it.
func WithInstanceID(id string) AcceptOption { return func(o *acceptOptions) { o.instance = id } }

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
