package streams

import (
	"context"
	"strconv"

	"github.com/redis/go-redis/v9"
)

// commitScript ends a stage's work on a batch atomically: XADD each output
// entry to the next stage's stream (KEYS[2]) or the dead-letter stream
// (KEYS[3]), mark idempotency records (KEYS[4..]) saved when they still
// exist — pointing them at the original message when the entry was a late
// duplicate — and XACK the input entries (KEYS[1]). One script, one shard's hash
// tag: the ack can never be recorded without the output, nor the output
// twice for one ack. ARGV: group, n, id1..idn, k, then per output entry:
// target key index, field count, fields...; then per idempotency key:
// original server_msg_id (” to keep), seq, send_at.
var commitScript = redis.NewScript(`
local group = ARGV[1]
local n = tonumber(ARGV[2])
local i = 3
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
for j = 4, #KEYS do
  if redis.call('EXISTS', KEYS[j]) == 1 then
    redis.call('HSET', KEYS[j], 'saved', '1')
    local o = ARGV[i]
    if o ~= '' then redis.call('HSET', KEYS[j], 'id', o, 'seq', ARGV[i + 1], 'at', ARGV[i + 2]) end
  end
  i = i + 3
end
if n > 0 then redis.call('XACK', KEYS[1], group, unpack(ids)) end
return n
`)

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
	keys := []string{c.Input, next, dead}
	for _, m := range c.MarkSaved {
		keys = append(keys, m.Key)
	}
	args := make([]any, 0, 4+len(c.Ack)+len(c.ToNext)*12+len(c.ToDead)*14)
	args = append(args, c.Group, len(c.Ack))
	for _, id := range c.Ack {
		args = append(args, id)
	}
	args = append(args, len(c.ToNext)+len(c.ToDead))
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
	for _, m := range c.MarkSaved {
		args = append(args, m.ServerMsgID, m.Seq, m.SendAt)
	}
	return classify("commit "+c.Input, commitScript.Run(ctx, rdb, keys, args...).Err())
}
