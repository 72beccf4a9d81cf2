package streams

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/nexo-im/nexo/store/storetest"
)

// echoScript returns its key and first argument, and bumps a counter key so
// the test can check every call ran exactly once.
var echoScript = redis.NewScript(`
redis.call('INCR', KEYS[2])
return {KEYS[1], ARGV[1]}
`)

// roundTrips counts commands and pipelines sent to Redis.
type roundTrips struct{ n atomic.Int64 }

func (r *roundTrips) DialHook(next redis.DialHook) redis.DialHook { return next }
func (r *roundTrips) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error { r.n.Add(1); return next(ctx, cmd) }
}
func (r *roundTrips) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error { r.n.Add(1); return next(ctx, cmds) }
}

// Concurrent calls each get their own reply, every call runs exactly once,
// and calls that arrive while a round trip is in flight share the next one.
func TestEvalBatcherPipelinesConcurrentCalls(t *testing.T) {
	rdb, prefix := storetest.Redis(t)
	var rt roundTrips
	rdb.AddHook(&rt)
	b := newEvalBatcher(rdb, echoScript)
	ctx := context.Background()
	counter := prefix + ":{s0}:count"
	if _, err := b.run(ctx, []string{prefix + ":{s0}:k", counter}, []any{"warm"}); err != nil {
		t.Fatal(err) // also loads the script
	}
	rt.n.Store(0)

	const workers, each = 32, 50
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				key := fmt.Sprintf("%s:{s0}:k%d", prefix, w)
				arg := fmt.Sprintf("%d-%d", w, i)
				res, err := b.run(ctx, []string{key, counter}, []any{arg})
				if err != nil || len(res) != 2 || res[0] != key || res[1] != arg {
					t.Errorf("call %s: %q %v", arg, res, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	if n, _ := rdb.Get(ctx, counter).Int(); n != workers*each+1 {
		t.Fatalf("script ran %d times, want %d", n, workers*each+1)
	}
	trips := rt.n.Load()
	t.Logf("%d calls in %d round trips", workers*each, trips)
	if trips >= workers*each {
		t.Fatalf("%d calls took %d round trips: nothing was pipelined", workers*each, trips)
	}
}

// A pipelined call that meets NOSCRIPT (Redis lost its script cache) is
// sent again with the script, as Script.Run does.
func TestEvalBatcherReloadsAfterNoScript(t *testing.T) {
	mr := miniredis.RunT(t)
	rdb := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	t.Cleanup(func() { _ = rdb.Close() })
	b := newEvalBatcher(rdb, echoScript)
	// Never loaded: a pipeline of EVALSHA all fail with NOSCRIPT.
	res := make([][]string, 2)
	errs := make([]error, 2)
	batch := []*evalCall{
		{keys: []string{"a", "n"}, args: []any{"1"}, done: make(chan struct{}, 1)},
		{keys: []string{"b", "n"}, args: []any{"2"}, done: make(chan struct{}, 1)},
	}
	b.send(context.Background(), batch)
	for i, c := range batch {
		res[i], errs[i] = c.res, c.err
	}
	if errs[0] != nil || errs[1] != nil || res[0][1] != "1" || res[1][1] != "2" {
		t.Fatalf("after NOSCRIPT: %q %v", res, errs)
	}
	if n, _ := rdb.Get(context.Background(), "n").Int(); n != 2 {
		t.Fatalf("script ran %d times, want 2", n)
	}
}
