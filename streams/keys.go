// Package streams is Nexo's message bus on Redis Streams: stream and
// consumer-group names, shard routing, the atomic accept step (idempotency +
// seq + XADD in one Lua script), the envelope of a stream entry, the
// consumer loop the stages run on, and trimming. Every key of one shard
// shares the hash tag {sN}, so each script runs unchanged on Redis Cluster.
// docs/pipeline.md lists every stream and group. It also builds the
// cross-instance bus (Bus: watermill on Redis Streams, NATS JetStream or an
// in-process channel) and encodes its envelopes (docs/cluster.md).
package streams

import (
	"hash/fnv"
	"strconv"

	"github.com/nexo-im/nexo/configs"
)

// The stages, by the default name of their consumer group; metrics label
// a stage with it whatever its group is called (Keys.SaveGroup and
// Keys.DeliverGroup are the groups' configured names).
const (
	GroupSave    = "save"
	GroupDeliver = "deliver"
)

// Keys names every Redis key of the pipeline under a prefix. The zero value
// is not usable; build it with NewKeys.
type Keys struct {
	prefix string
	shards int
	names  configs.StreamNames
}

// NewKeys returns the key scheme for prefix (redis.key_prefix) and the
// number of shards (streams.shards, >= 1), with the default stream and
// group names (WithNames sets others).
func NewKeys(prefix string, shards int) Keys {
	if shards < 1 {
		shards = 1
	}
	return Keys{prefix: prefix, shards: shards, names: configs.DefaultStreamNames()}
}

// WithNames returns k with the stream and group names of n
// (streams.names); an empty name keeps k's.
func (k Keys) WithNames(n configs.StreamNames) Keys {
	for _, f := range []struct {
		dst *string
		v   string
	}{
		{&k.names.ToSave, n.ToSave}, {&k.names.ToDeliver, n.ToDeliver}, {&k.names.Dead, n.Dead},
		{&k.names.SaveGroup, n.SaveGroup}, {&k.names.DeliverGroup, n.DeliverGroup},
	} {
		if f.v != "" {
			*f.dst = f.v
		}
	}
	return k
}

// Names returns the stream and group names in use.
func (k Keys) Names() configs.StreamNames { return k.names }

// SaveGroup is the save stage's consumer group on ToSave.
func (k Keys) SaveGroup() string { return k.names.SaveGroup }

// DeliverGroup is the deliver stage's consumer group on ToDeliver.
func (k Keys) DeliverGroup() string { return k.names.DeliverGroup }

// Shards is the number of shards.
func (k Keys) Shards() int { return k.shards }

// Shard routes a conversation to its shard: FNV-1a of the conversation ID
// modulo the shard count, so one conversation always lands on one stream and
// keeps its order.
func (k Keys) Shard(conversationID string) int {
	h := fnv.New32a()
	_, _ = h.Write([]byte(conversationID))
	return int(h.Sum32() % uint32(k.shards))
}

func (k Keys) key(shard int, rest string) string {
	// Built on every accept and stage commit: concatenation, not Sprintf
	// (BenchmarkKeys).
	return k.prefix + ":{s" + strconv.Itoa(shard) + "}:" + rest
}

// ToSave is the input stream of the save stage on a shard.
func (k Keys) ToSave(shard int) string { return k.key(shard, k.names.ToSave) }

// ToDeliver is the input stream of the deliver stage on a shard.
func (k Keys) ToDeliver(shard int) string { return k.key(shard, k.names.ToDeliver) }

// Dead is the dead-letter stream of a shard: entries that failed
// permanently, with the error.
func (k Keys) Dead(shard int) string { return k.key(shard, k.names.Dead) }

// Idem is the idempotency record of (sender_id, client_msg_id), kept on the
// shard of the message's conversation.
func (k Keys) Idem(shard int, senderID, clientMsgID string) string {
	return k.prefix + ":{s" + strconv.Itoa(shard) + "}:idem:" + senderID + ":" + clientMsgID
}

// Seq is the Redis allocator of a conversation: a hash {cur, ceil} holding
// the last issued seq and the ceiling of the current database lease.
func (k Keys) Seq(shard int, conversationID string) string {
	return k.prefix + ":{s" + strconv.Itoa(shard) + "}:seq:" + conversationID
}

// InFlight is a conversation's record of seqs accepted but not yet settled
// (saved, resolved as a duplicate, or dead-lettered): a sorted set, member
// the seq, score the Unix ms after which the mark no longer counts. The
// accept script adds a seq in the same atomic step as its stream entry; the
// save stage's commit removes it in the same step as its XACK. A pull reads
// it to tell "not yet" from "never" (docs/sync.md).
func (k Keys) InFlight(shard int, conversationID string) string {
	return k.prefix + ":{s" + strconv.Itoa(shard) + "}:pend:" + conversationID
}

// Owner is a shard's lease: a hash {holder, token, at} with a TTL (see
// ShardLeases). Every stage commit of the shard checks its token.
func (k Keys) Owner(shard int) string { return k.key(shard, "owner") }

// Epoch is a shard's fencing counter (INCR), never expired: each new lease
// gets a token above every earlier one.
func (k Keys) Epoch(shard int) string { return k.key(shard, "epoch") }
