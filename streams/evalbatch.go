package streams

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/redis/go-redis/v9"

	"github.com/nexo-im/nexo/domain"
)

// evalBatcher runs one script for many concurrent callers with as few
// round trips as possible (domain.GroupCommit: group commit without a
// timer). A call that finds no round trip in flight goes at once, alone (no
// added latency at low load); calls that arrive while a round trip is in
// flight go together, as one pipeline, as soon as it returns — so under
// load one round trip (one write and one read system call on each side)
// carries many accepts.
//
// Calls in one pipeline run in arrival order; Redis runs each script
// atomically as before, so nothing about a single call's semantics
// changes. On Redis Cluster the client splits the pipeline by node.
//
// With a multi script (newMultiEvalBatcher), the queued calls whose first
// key has the same hash tag ({s3}: one shard, so one cluster slot) go as
// one invocation of it instead of one script call each. A script call has
// a fixed cost on every server — parsing the call, and on the embedded
// Redis (miniredis) a fresh Lua interpreter per call, most of that
// server's CPU per accepted message — which the batch pays once.
type evalBatcher struct {
	rdb    redis.UniversalClient
	script *redis.Script
	multi  *redis.Script // nil: every call is its own script call
	gc     *domain.GroupCommit[evalArgs, []string]
}

type evalArgs struct {
	keys []string
	args []any
}

// evalCall is one caller's script call in a batch.
type evalCall = domain.Call[evalArgs, []string]

func newEvalBatcher(rdb redis.UniversalClient, script *redis.Script) *evalBatcher {
	return newMultiEvalBatcher(rdb, script, nil)
}

// newMultiEvalBatcher is newEvalBatcher whose batches run as one call of
// multi per hash tag. multi must take the calls of one group as KEYS = the
// calls' keys concatenated and ARGV = n, then per call: its key count, its
// argument count, its arguments; run each call as script would, in order,
// catching a call's error so the others still run (a failed call must not
// have written anything the others depend on: Redis does not undo a
// script's writes); and reply with n entries, each a call's reply (an
// array of strings) or {'err', message}.
func newMultiEvalBatcher(rdb redis.UniversalClient, script, multi *redis.Script) *evalBatcher {
	b := &evalBatcher{rdb: rdb, script: script, multi: multi}
	b.gc = domain.NewGroupCommit(0, b.send)
	return b
}

// run evaluates the script with keys and args and returns its reply as
// strings. Errors are those of Script.Run (the caller classifies them).
func (b *evalBatcher) run(ctx context.Context, keys []string, args []any) ([]string, error) {
	return b.gc.Do(ctx, evalArgs{keys: keys, args: args})
}

// send runs every call of batch and fills in its result.
func (b *evalBatcher) send(ctx context.Context, batch []*evalCall) {
	if len(batch) == 1 {
		c := batch[0]
		c.Res, c.Err = b.script.Run(ctx, b.rdb, c.Req.keys, c.Req.args...).StringSlice()
		return
	}
	groups := b.group(batch)
	pipe := b.rdb.Pipeline()
	cmds := make([]*redis.Cmd, len(groups))
	for i, g := range groups {
		if len(g) == 1 {
			cmds[i] = b.script.EvalSha(ctx, pipe, g[0].Req.keys, g[0].Req.args...)
		} else {
			keys, args := multiArgs(g)
			cmds[i] = b.multi.EvalSha(ctx, pipe, keys, args...)
		}
	}
	_, _ = pipe.Exec(ctx) // each command carries its own error
	for i, g := range groups {
		if len(g) == 1 {
			c := g[0]
			c.Res, c.Err = cmds[i].StringSlice()
			if c.Err != nil && redis.HasErrorPrefix(c.Err, "NOSCRIPT") {
				// Redis lost its script cache (restart, SCRIPT FLUSH): Run
				// loads the script again, as the unbatched path does.
				c.Res, c.Err = b.script.Run(ctx, b.rdb, c.Req.keys, c.Req.args...).StringSlice()
			}
			continue
		}
		cmd := cmds[i]
		if redis.HasErrorPrefix(cmd.Err(), "NOSCRIPT") {
			keys, args := multiArgs(g)
			cmd = b.multi.Run(ctx, b.rdb, keys, args...)
		}
		splitMulti(g, cmd)
	}
}

// group splits batch by the hash tag of each call's first key, keeping
// arrival order within a group; without a multi script every call is its
// own group.
func (b *evalBatcher) group(batch []*evalCall) [][]*evalCall {
	groups := make([][]*evalCall, 0, len(batch))
	if b.multi == nil {
		for _, c := range batch {
			groups = append(groups, []*evalCall{c})
		}
		return groups
	}
	at := make(map[string]int, 8)
	for _, c := range batch {
		tag, ok := hashTag(c.Req.keys)
		if !ok {
			groups = append(groups, []*evalCall{c})
			continue
		}
		i, seen := at[tag]
		if !seen {
			i = len(groups)
			at[tag] = i
			groups = append(groups, nil)
		}
		groups[i] = append(groups[i], c)
	}
	return groups
}

// hashTag returns the hash tag of keys[0] (what Redis Cluster hashes: the
// text between the first '{' and the next '}', when not empty).
func hashTag(keys []string) (string, bool) {
	if len(keys) == 0 {
		return "", false
	}
	k := keys[0]
	open := strings.IndexByte(k, '{')
	if open < 0 {
		return "", false
	}
	end := strings.IndexByte(k[open+1:], '}')
	if end <= 0 {
		return "", false
	}
	return k[open+1 : open+1+end], true
}

// multiArgs lays out the calls of g as the multi script takes them.
func multiArgs(g []*evalCall) ([]string, []any) {
	var keys []string
	args := []any{len(g)}
	for _, c := range g {
		keys = append(keys, c.Req.keys...)
		args = append(args, len(c.Req.keys), len(c.Req.args))
		args = append(args, c.Req.args...)
	}
	return keys, args
}

// splitMulti hands each call of g its entry of the multi script's reply.
func splitMulti(g []*evalCall, cmd *redis.Cmd) {
	replies, err := cmd.Slice()
	if err == nil && len(replies) != len(g) {
		err = fmt.Errorf("batched script: %d replies for %d calls", len(replies), len(g))
	}
	if err != nil {
		for _, c := range g {
			c.Err = err
		}
		return
	}
	for i, c := range g {
		c.Res, c.Err = replyStrings(replies[i])
	}
}

// replyStrings converts one call's reply: an array of strings, or
// {'err', message} for a call that failed.
func replyStrings(v any) ([]string, error) {
	if e, ok := v.(error); ok {
		return nil, e
	}
	arr, ok := v.([]any)
	if !ok {
		return nil, fmt.Errorf("batched script: reply %T, want an array", v)
	}
	out := make([]string, len(arr))
	for i, x := range arr {
		switch x := x.(type) {
		case string:
			out[i] = x
		case int64:
			out[i] = strconv.FormatInt(x, 10)
		default:
			return nil, fmt.Errorf("batched script: reply element %T", x)
		}
	}
	if len(out) == 2 && out[0] == "err" {
		return nil, callError(out[1])
	}
	return out, nil
}

// callError is one batched call's error: an answer from Redis (it
// implements redis.Error), as the error of a script call of its own is.
type callError string

func (e callError) Error() string { return string(e) }

// RedisError marks callError as an error Redis answered with.
func (callError) RedisError() {}
