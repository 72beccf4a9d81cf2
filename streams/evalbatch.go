package streams

import (
	"context"
	"sync"

	"github.com/redis/go-redis/v9"
)

// evalBatcher runs one script for many concurrent callers with as few
// round trips as possible: group commit without a timer. A caller that
// finds no round trip in flight sends its call at once, alone (no added
// latency at low load); calls that arrive while a round trip is in flight
// queue up and go together, as one pipeline, as soon as it returns — so
// under load one round trip (one write and one read system call on each
// side) carries many accepts. Each leader sends one batch and hands the
// next one to the first queued caller, so no caller waits for more than
// the round trip in flight and its own.
//
// Calls in one pipeline run in arrival order; Redis runs each script
// atomically as before, so nothing about a single call's semantics
// changes. On Redis Cluster the client splits the pipeline by node.
type evalBatcher struct {
	rdb    redis.UniversalClient
	script *redis.Script

	mu    sync.Mutex
	busy  bool // a leader is sending a batch
	queue []*evalCall
}

type evalCall struct {
	keys []string
	args []any
	res  []string
	err  error
	lead bool          // woken to send the next batch, not with a result
	done chan struct{} // receives once: result ready, or lead
}

func newEvalBatcher(rdb redis.UniversalClient, script *redis.Script) *evalBatcher {
	return &evalBatcher{rdb: rdb, script: script}
}

// run evaluates the script with keys and args and returns its reply as
// strings. Errors are those of Script.Run (the caller classifies them).
func (b *evalBatcher) run(ctx context.Context, keys []string, args []any) ([]string, error) {
	c := &evalCall{keys: keys, args: args, done: make(chan struct{}, 1)}
	b.mu.Lock()
	b.queue = append(b.queue, c)
	if b.busy {
		b.mu.Unlock()
		// A queued call is never abandoned (a leader may hand it the next
		// batch); the round trip is bounded by the client's timeouts.
		<-c.done
		if !c.lead {
			return c.res, c.err
		}
		b.mu.Lock()
	}
	b.busy = true
	batch := b.queue
	b.queue = nil
	b.mu.Unlock()

	// The batch carries other callers' calls: one caller's cancellation
	// must not fail them.
	b.send(context.WithoutCancel(ctx), batch)

	b.mu.Lock()
	if len(b.queue) > 0 {
		next := b.queue[0]
		next.lead = true
		next.done <- struct{}{}
	} else {
		b.busy = false
	}
	b.mu.Unlock()
	for _, o := range batch {
		if o != c {
			o.done <- struct{}{}
		}
	}
	return c.res, c.err
}

// send runs every call of batch and fills in its result.
func (b *evalBatcher) send(ctx context.Context, batch []*evalCall) {
	if len(batch) == 1 {
		c := batch[0]
		c.res, c.err = b.script.Run(ctx, b.rdb, c.keys, c.args...).StringSlice()
		return
	}
	pipe := b.rdb.Pipeline()
	cmds := make([]*redis.Cmd, len(batch))
	for i, c := range batch {
		cmds[i] = b.script.EvalSha(ctx, pipe, c.keys, c.args...)
	}
	_, _ = pipe.Exec(ctx) // each command carries its own error
	for i, c := range batch {
		c.res, c.err = cmds[i].StringSlice()
		if c.err != nil && redis.HasErrorPrefix(c.err, "NOSCRIPT") {
			// Redis lost its script cache (restart, SCRIPT FLUSH): Run
			// loads the script again, as the unbatched path does.
			c.res, c.err = b.script.Run(ctx, b.rdb, c.keys, c.args...).StringSlice()
		}
	}
}
