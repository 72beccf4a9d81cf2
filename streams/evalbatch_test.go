package streams

import (
	"context"
	"fmt"
	"slices"
	"strings"
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

// scriptCalls counts EVAL and EVALSHA commands, in pipelines too.
type scriptCalls struct{ n atomic.Int64 }

func (s *scriptCalls) count(cmd redis.Cmder) {
	if name := cmd.Name(); name == "evalsha" || name == "eval" {
		s.n.Add(1)
	}
}
func (s *scriptCalls) DialHook(next redis.DialHook) redis.DialHook { return next }
func (s *scriptCalls) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error { s.count(cmd); return next(ctx, cmd) }
}
func (s *scriptCalls) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		for _, c := range cmds {
			s.count(c)
		}
		return next(ctx, cmds)
	}
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
		{Req: evalArgs{keys: []string{"a", "n"}, args: []any{"1"}}},
		{Req: evalArgs{keys: []string{"b", "n"}, args: []any{"2"}}},
	}
	b.send(context.Background(), batch)
	for i, c := range batch {
		res[i], errs[i] = c.Res, c.Err
	}
	if errs[0] != nil || errs[1] != nil || res[0][1] != "1" || res[1][1] != "2" {
		t.Fatalf("after NOSCRIPT: %q %v", res, errs)
	}
	if n, _ := rdb.Get(context.Background(), "n").Int(); n != 2 {
		t.Fatalf("script ran %d times, want 2", n)
	}
}

// A batch of accept calls of one shard runs as one acceptBatchScript call
// and each call gets what a script call of its own would have answered:
// a new message "ok", a retry of it "dup" with the original's values, a
// call on a key of the wrong type its error (the calls after it still
// run), and the fence's run_id on every reply.
func TestAcceptBatchKeepsPerCallOutcomes(t *testing.T) {
	rdb, prefix := storetest.Redis(t)
	ctx := context.Background()
	var sc scriptCalls
	rdb.AddHook(&sc)
	b := newMultiEvalBatcher(rdb, acceptScript, acceptBatchScript)
	k := func(name string) string { return prefix + ":{s0}:" + name }
	if err := rdb.HSet(ctx, k("seq:c"), "cur", 0, "ceil", 10).Err(); err != nil {
		t.Fatal(err)
	}
	if err := rdb.Set(ctx, k("idem:bad"), "x", 0).Err(); err != nil {
		t.Fatal(err)
	}
	// The fence on: the allocator must carry this server's run_id.
	node, err := rdb.Eval(ctx, `return string.match(redis.call('INFO', 'server'), 'run_id:(%x+)') or ''`, nil).Text()
	if err != nil {
		t.Fatal(err)
	}
	if err := rdb.HSet(ctx, k("seq:c"), "node", node).Err(); err != nil {
		t.Fatal(err)
	}
	call := func(idem, id string) *evalCall {
		return &evalCall{Req: evalArgs{keys: []string{k("idem:" + idem), k("seq:c"), k("pend:c"), k("to_save")},
			args: []any{id, 1000, 60000, "s", "body", "conn", 2000, "1", 9999999999999, 60000}}}
	}
	batch := []*evalCall{call("a", "m1"), call("a", "m1-retry"), call("bad", "m2"), call("b", "m3")}
	if err := acceptBatchScript.Load(ctx, rdb).Err(); err != nil {
		t.Fatal(err)
	}
	sc.n.Store(0)
	b.send(ctx, batch)
	if n := sc.n.Load(); n != 1 {
		t.Errorf("one batch took %d script calls, want 1", n)
	}
	want := [][]string{
		{"ok", "m1", "1", "1000", "0", node, "9"}, // 9 seqs left in the block
		{"dup", "m1", "1", "1000", "0", node},
		nil,
		{"ok", "m3", "2", "1000", "0", node, "8"},
	}
	for i, c := range batch {
		if i == 2 {
			if c.Err == nil || !strings.Contains(c.Err.Error(), "WRONGTYPE") {
				t.Errorf("call on a string key: %q, %v; want a WRONGTYPE error", c.Res, c.Err)
			}
			continue
		}
		if c.Err != nil || !slices.Equal(c.Res, want[i]) {
			t.Errorf("call %d: %q, %v; want %q", i, c.Res, c.Err, want[i])
		}
	}
	if n := rdb.XLen(ctx, k("to_save")).Val(); n != 2 {
		t.Errorf("stream has %d entries, want 2", n)
	}
}
