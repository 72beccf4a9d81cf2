package streams

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/redis/go-redis/v9"
)

// commitScript ends a stage's work on a batch atomically: check the shard
// lease's fence (KEYS[4], ARGV[2]: "token:run"; empty skips the check),
// XADD each output entry to the next stage's stream (KEYS[2]), the
// dead-letter stream (KEYS[3]) or a later stage's queue (Commit.Appends),
// mark idempotency records saved when they still exist — pointing them at
// the original message when the entry was a late duplicate —, settle the
// in-flight marks of the entries' seqs, and XACK the input entries
// (KEYS[1]). One script: the ack can never be recorded without the output,
// nor the output twice for one ack, nor either by a consumer whose lease
// was taken over; an XADD that fails ends the script before the XACK, so
// the batch is retried. ARGV: group, token, n, id1..idn, k, then per
// output entry: target key index, field count, fields...; m, then per
// idempotency key (KEYS[5..4+m]): original server_msg_id (empty to keep),
// seq, send_at; s, then per in-flight key (KEYS[5+m..4+m+s]): the seq to
// settle. The appends' streams follow those keys. Fenced out, it changes
// nothing and answers the error "FENCED".
var commitScript = redis.NewScript(`
if ARGV[2] ~= '' and redis.call('HGET', KEYS[4], 'fence') ~= ARGV[2] then
  return redis.error_reply('FENCED shard lease lost')
end
local group = ARGV[1]
local n = tonumber(ARGV[3])
local i = 4
local ids = {}
for j = 1, n do ids[j] = ARGV[i]; i = i + 1 end
local k = tonumber(ARGV[i]); i = i + 1
for j = 1, k do
  local target = KEYS[tonumber(ARGV[i])]
  local nf = tonumber(ARGV[i + 1])
  i = i + 2
  local fields = {}
  for f = 1, nf do fields[f] = ARGV[i]; i = i + 1 end
  redis.call('XADD', target, '*', unpack(fields))
end
local m = tonumber(ARGV[i]); i = i + 1
for j = 5, 4 + m do
  if redis.call('EXISTS', KEYS[j]) == 1 then
    redis.call('HSET', KEYS[j], 'saved', '1')
    local o = ARGV[i]
    if o ~= '' then redis.call('HSET', KEYS[j], 'id', o, 'seq', ARGV[i + 1], 'at', ARGV[i + 2]) end
  end
  i = i + 3
end
local s = tonumber(ARGV[i]); i = i + 1
for j = 5 + m, 4 + m + s do
  redis.call('ZREM', KEYS[j], ARGV[i])
  i = i + 1
end
if n > 0 then redis.call('XACK', KEYS[1], group, unpack(ids)) end
return n
`)

// ErrFenced: the shard's lease is no longer held with the commit's token (it
// expired or another instance took it over); nothing of the commit was
// applied, and the stage must stop working on the shard.
var ErrFenced = errors.New("shard lease lost (fenced)")

// DeadEntry is an entry parked in the dead-letter stream with its error.
type DeadEntry struct {
	Fields map[string]any // the original entry's fields
	Source string         // the stream it came from
	Err    string
}

// Commit is one stage's atomic output for a batch of one shard.
type Commit struct {
	Input, Group string   // the stream read and its group
	Ack          []string // input IDs to acknowledge
	Next         string   // next stage's stream (for ToNext)
	ToNext       []Entry
	Dead         string // the shard's dead-letter stream (for ToDead)
	ToDead       []DeadEntry
	MarkSaved    []IdemSaved
	// Settle removes the in-flight marks of seqs this commit settles for
	// good (saved, a resolved duplicate, dead-lettered): the save stage.
	Settle []Settled
	// Appends are entries for later stages' queues (search, offline push,
	// webhooks: the save stage's AfterSave hooks), added in the commit's
	// atomic step, so the batch's acknowledgement costs no round trip of
	// its own and never happens without them. On Redis Cluster, where they
	// live in other slots, they are added just before the script, in one
	// pipelined round trip (AppendAll).
	Appends []Append
	// Fence, when set, makes the commit conditional on the shard's lease
	// still holding this token (see ShardLeases).
	Fence *Fence
}

type fenceCtxKey struct{}

// WithFence returns ctx carrying f: a Commit applied under it without a
// Fence of its own is fenced with f. The pipeline sets it per shard, so the
// stages need not know about leases.
func WithFence(ctx context.Context, f *Fence) context.Context {
	return context.WithValue(ctx, fenceCtxKey{}, f)
}

// FenceFrom returns the fence WithFence put in ctx, or nil.
func FenceFrom(ctx context.Context) *Fence {
	f, _ := ctx.Value(fenceCtxKey{}).(*Fence)
	return f
}

// Settled names one in-flight mark: the conversation's key (Keys.InFlight)
// and the seq.
type Settled struct {
	Key string
	Seq int64
}

// Fence is a shard lease's key (Keys.Owner), the token it was granted
// with, and the fence value the commit compares (ShardLeases.Fence: the
// token qualified by the holding process's run).
type Fence struct {
	Key   string
	Token int64
	Value string
}

// IdemSaved marks an idempotency record saved. For a late duplicate,
// ServerMsgID/Seq/SendAt name the original so a further retry gets the
// original's ACK; leave ServerMsgID empty otherwise.
type IdemSaved struct {
	Key         string
	ServerMsgID string
	Seq         int64
	SendAt      int64
}

// Apply runs the commit. All keys must be of one shard. An error leaves
// nothing applied; the stage retries the batch.
func (c Commit) Apply(ctx context.Context, rdb redis.UniversalClient) error {
	next, dead := c.Next, c.Dead
	if next == "" {
		next = c.Input
	}
	if dead == "" {
		dead = c.Input
	}
	fenceKey, token := c.Input, ""
	fence := c.Fence
	if fence == nil {
		fence = FenceFrom(ctx)
	}
	if fence != nil {
		fenceKey, token = fence.Key, fence.Value
	}
	appends := c.Appends
	if _, cluster := rdb.(*redis.ClusterClient); cluster && len(appends) > 0 {
		if err := AppendAll(ctx, rdb, appends); err != nil {
			return err
		}
		appends = nil
	}
	keys := make([]string, 0, 4+len(c.MarkSaved)+len(c.Settle)+len(appends))
	keys = append(keys, c.Input, next, dead, fenceKey)
	for _, m := range c.MarkSaved {
		keys = append(keys, m.Key)
	}
	for _, st := range c.Settle {
		keys = append(keys, st.Key)
	}
	args := make([]any, 0, 7+len(c.Ack)+len(c.ToNext)*14+len(c.ToDead)*14+len(appends)*4+len(c.MarkSaved)*3+len(c.Settle))
	args = append(args, c.Group, token, len(c.Ack))
	for _, id := range c.Ack {
		args = append(args, id)
	}
	args = append(args, len(c.ToNext)+len(c.ToDead)+len(appends))
	for i := range c.ToNext {
		f := entryArgs(&c.ToNext[i])
		args = append(args, 2, len(f))
		args = append(args, f...)
	}
	for _, d := range c.ToDead {
		f := make([]any, 0, 2*len(d.Fields)+4)
		for k, v := range d.Fields {
			f = append(f, k, v)
		}
		f = append(f, fieldSource, d.Source, fieldError, d.Err)
		args = append(args, 3, strconv.Itoa(len(f)))
		args = append(args, f...)
	}
	for _, a := range appends {
		keys = append(keys, a.Stream)
		args = append(args, len(keys), len(a.Values))
		args = append(args, a.Values...)
	}
	args = append(args, len(c.MarkSaved))
	for _, m := range c.MarkSaved {
		args = append(args, m.ServerMsgID, m.Seq, m.SendAt)
	}
	args = append(args, len(c.Settle))
	for _, st := range c.Settle {
		args = append(args, st.Seq)
	}
	err := commitScript.Run(ctx, rdb, keys, args...).Err()
	if err != nil && strings.HasPrefix(err.Error(), "FENCED") {
		return fmt.Errorf("commit %s: %w", c.Input, ErrFenced)
	}
	return classify("commit "+c.Input, err)
}
