package streams

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
	"golang.org/x/sync/singleflight"

	"github.com/nexo-im/nexo/domain"
)

// acceptScript is the accept step: idempotency claim, seq allocation, the
// in-flight mark and XADD in one atomic call. KEYS: idem, seq, in-flight[,
// stream]. ARGV: server_msg_id, send_at, idem TTL (ms), route, body, origin
// conn, accepted_at, fence ('1' or '0'), in-flight mark expiry (Unix ms),
// the in-flight key's TTL (ms), the accepting instance's id (empty or absent:
// the entry has no instance_id field). Without a stream key it only claims,
// allocates and marks (the synchronous path). Replies {status, server_msg_id, seq, send_at, saved,
// node}: status "ok" (new), "dup" (a retry: the original's values), "lease"
// (the current database lease is used up or Redis lost it: lease a block
// and install it first) or "stale" (fence on: the allocator was last
// written by another Redis server — a promoted replica, a restart from
// disk, a migrated slot — so it may be older than what was issued: lease
// a fresh block). node is the run_id of the server that ran the script
// (fence on), which the lost-message check watches for changes.
var acceptScript = redis.NewScript(acceptLua + `
local me = ''
if ARGV[8] == '1' then me = runID() end
return accept(KEYS, ARGV, me)
`)

// acceptBatchScript runs acceptScript's step for n calls of one shard in
// one script call (evalBatcher's multi-script layout: ARGV n, then per call
// its key count, argument count and acceptScript's ARGV), in order, and
// replies with each call's acceptScript reply. The fence's INFO runs once.
// A call that fails (pcall: a key of the wrong type) replies {'err', msg}
// and the others still run, so each call's outcome is what a script call
// of its own would have answered (including what a failed call leaves
// written: Redis undoes neither). A Redis over maxmemory refuses the
// script's first write, before any call has written.
var acceptBatchScript = redis.NewScript(acceptLua + `
local me
local n = tonumber(ARGV[1])
local ki, ai = 0, 2
local out = {}
for c = 1, n do
  local nk, na = tonumber(ARGV[ai]), tonumber(ARGV[ai + 1])
  ai = ai + 2
  local k, a = {}, {}
  for j = 1, nk do k[j] = KEYS[ki + j] end
  for j = 1, na do a[j] = ARGV[ai + j - 1] end
  ki, ai = ki + nk, ai + na
  if me == nil and a[8] == '1' then me = runID() end
  local ok, res = pcall(accept, k, a, a[8] == '1' and me or '')
  if ok then out[c] = res else out[c] = {'err', tostring(res)} end
end
return out
`)

// acceptLua defines accept(k, a, me): the accept step on one call's KEYS
// and ARGV (as acceptScript takes them), me being the fence's run_id (”
// with the fence off); and runID().
const acceptLua = `
local function runID()
  return string.match(redis.call('INFO', 'server'), 'run_id:(%x+)') or ''
end
local function accept(k, a, me)
  local ex = redis.call('HMGET', k[1], 'id', 'seq', 'at', 'saved')
  if ex[1] then
    return {'dup', ex[1], ex[2], ex[3], ex[4] or '0', me}
  end
  local s = redis.call('HMGET', k[2], 'cur', 'ceil', 'node')
  local cur = tonumber(s[1]) or 0
  local ceil = tonumber(s[2]) or 0
  if cur >= ceil then
    return {'lease', '', string.format('%d', cur), '', '0', me}
  end
  if me ~= '' and s[3] ~= me then
    return {'stale', '', string.format('%d', cur), '', '0', me}
  end
  local seq = string.format('%d', cur + 1)
  redis.call('HSET', k[2], 'cur', seq)
  redis.call('HSET', k[1], 'id', a[1], 'seq', seq, 'at', a[2], 'saved', '0')
  redis.call('PEXPIRE', k[1], a[3])
  redis.call('ZADD', k[3], a[9], seq)
  redis.call('PEXPIRE', k[3], a[10])
  if #k >= 4 then
    if a[11] and a[11] ~= '' then
      redis.call('XADD', k[4], '*', 'seq', seq, 'r', a[4], 'm', a[5], 'c', a[6], 't', a[7], 'instance_id', a[11])
    else
      redis.call('XADD', k[4], '*', 'seq', seq, 'r', a[4], 'm', a[5], 'c', a[6], 't', a[7])
    end
  end
  return {'ok', a[1], seq, a[2], '0', me, string.format('%d', ceil - cur - 1)}
end
`

// Accepter runs the accept step.
type Accepter struct {
	rdb      redis.UniversalClient
	keys     Keys
	leaser   Leaser
	block    int64
	idemTTL  time.Duration
	inflight singleflight.Group
	batch    *evalBatcher // acceptScript calls, pipelined under load
	opt      acceptOptions
	lost     *lostCheck  // nil without WithLostCheck
	perf     *acceptPerf // nil without WithAcceptPerfLog
	records  *recordsWatch
}

// NewAccepter returns an Accepter. block is seq.lease_block; idemTTL is
// two_phase.idempotency_ttl. By default the allocator is fenced by the
// Redis server's run_id (see installScript); opts change that and add the
// replica wait and the lost-message check.
func NewAccepter(rdb redis.UniversalClient, keys Keys, leaser Leaser, block int64, idemTTL time.Duration, opts ...AcceptOption) *Accepter {
	a := &Accepter{rdb: rdb, keys: keys, leaser: leaser, block: block, idemTTL: idemTTL, opt: acceptOptions{fence: true},
		batch: newMultiEvalBatcher(rdb, acceptScript, acceptBatchScript), records: newRecordsWatch(time.Now())}
	for _, o := range opts {
		o(&a.opt)
	}
	if a.opt.lookup != nil {
		a.lost = newLostCheck(a, a.opt)
		a.lost.probe = a.shardRunID
	}
	a.perf = newAcceptPerf(rdb, keys, a.opt.perfLog)
	return a
}

// Keys returns the key scheme.
func (a *Accepter) Keys() Keys { return a.keys }

// AcceptRequest is one message to accept. Msg carries everything but Seq;
// its ServerMsgID and SendAt are used unless the message is a retry.
type AcceptRequest struct {
	Msg        domain.Message
	Route      Route
	OriginConn string
	// Append: XADD to the first stage's stream (two-phase). False only claims
	// idempotency and allocates the seq (the synchronous path).
	Append bool
}

// Accepted is the outcome of the accept step.
type Accepted struct {
	ServerMsgID string
	Seq         int64
	SendAt      int64
	Shard       int
	// Duplicate: a retry of an earlier accept; the fields are the original's.
	Duplicate bool
	// Saved: the original is already saved (only with Duplicate).
	Saved bool
}

// Accept claims (sender_id, client_msg_id), allocates the conversation's
// next seq and, with Append, XADDs the entry to the shard's first-stage
// stream — atomically. A retry returns the original values with Duplicate
// set. Errors: ErrRedisUnavailable (wrapped) when Redis does not answer; a
// lease failure (database) otherwise.
func (a *Accepter) Accept(ctx context.Context, req AcceptRequest) (Accepted, error) {
	began := a.perf.start()
	m := &req.Msg
	shard := a.keys.Shard(m.ConversationID)
	keys := []string{a.keys.Idem(shard, m.SenderID, m.ClientMsgID), a.keys.Seq(shard, m.ConversationID),
		a.keys.InFlight(shard, m.ConversationID)}
	if req.Append {
		stream := a.keys.ToSave(shard)
		if req.Route == DeliverFirst {
			stream = a.keys.ToDeliver(shard)
		}
		keys = append(keys, stream)
	}
	now := time.Now().UnixMilli()
	fence := "0"
	if a.opt.fence {
		fence = "1"
	}
	// A stream entry stays in flight until the save stage settles it (the
	// mark's expiry only bounds the harm of an entry that can never be
	// decoded); a synchronous save has SyncSaveWindow.
	markFor := max(a.idemTTL, SyncSaveWindow)
	if !req.Append {
		markFor = SyncSaveWindow
	}
	args := []any{m.ServerMsgID, m.SendAt, a.idemTTL.Milliseconds(), string(req.Route), "", req.OriginConn, now, fence,
		now + markFor.Milliseconds(), max(a.idemTTL, SyncSaveWindow).Milliseconds(), a.opt.instance}
	if req.Append {
		args[4] = EncodeMessage(m)
	}
	for attempt := 0; ; attempt++ {
		called := a.perf.start()
		res, err := a.run(ctx, keys, args, req.Append)
		if err != nil {
			return Accepted{}, err
		}
		if len(res) != 6 && len(res) != 7 {
			return Accepted{}, fmt.Errorf("accept: unexpected reply %q", res)
		}
		if prev := a.records.saw(shard, res[5], time.Now()); prev != "" {
			a.lost.serverChanged(shard, prev, res[5])
		}
		switch res[0] {
		case "ok", "dup":
			seq, _ := strconv.ParseInt(res[2], 10, 64)
			at, _ := strconv.ParseInt(res[3], 10, 64)
			acc := Accepted{ServerMsgID: res[1], Seq: seq, SendAt: at, Shard: shard,
				Duplicate: res[0] == "dup", Saved: res[4] == "1"}
			if !acc.Duplicate && req.Append {
				a.lost.record(shard, m, seq)
			}
			if len(res) == 7 {
				// The 7th field: seqs left in the block after this one.
				if left, err := strconv.ParseInt(res[6], 10, 64); err == nil {
					a.leaseAhead(ctx, shard, m.ConversationID, left)
				}
			}
			a.perf.write(ctx, &req, acc, called, began)
			return acc, nil
		case "lease", "stale":
			// Under a burst on one conversation other accepts may use up a
			// fresh lease before this one retries; each round still serves
			// a whole block, so the bound is only against a broken install.
			if attempt >= 100 {
				return Accepted{}, fmt.Errorf("accept %s: lease not taking effect after %d attempts", m.ConversationID, attempt)
			}
			if err := a.refill(ctx, shard, m.ConversationID, res[0] == "stale"); err != nil {
				return Accepted{}, err
			}
		default:
			return Accepted{}, fmt.Errorf("accept: unexpected status %q", res[0])
		}
	}
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

// ReleaseIdle forgets the accepts the lost-message check remembers beyond
// its window and shrinks what a load grew, so an idle process holds no
// memory for a load that has passed (cmd/app calls it when idle). It
// changes nothing the check can still report: it drops a shard's entries
// only after that shard's server answered with the run_id that took them
// (one INFO per such shard), and a changed server starts their check. It
// returns about how many bytes it let go.
func (a *Accepter) ReleaseIdle(ctx context.Context) int64 { return a.lost.trim(ctx) }

// Saved tells the lost-message check that the messages of shard with
// these server_msg_ids are committed to the database, so it stops
// remembering them (the save stage calls it after each transaction). IDs
// this process did not accept are ignored; without the check it does
// nothing. It keeps the check's memory at about the save lag's worth of
// accepts instead of its whole window's (docs/pipeline.md).
func (a *Accepter) Saved(shard int, serverMsgIDs []string) { a.lost.saved(shard, serverMsgIDs) }

// runIDScript answers the run_id of the server that runs it (KEYS[1]
// routes it to a shard's server in a cluster).
var runIDScript = redis.NewScript(`return string.match(redis.call('INFO', 'server'), 'run_id:(%x+)') or ''`)

// shardRunID is the run_id of the Redis server answering for shard now.
func (a *Accepter) shardRunID(ctx context.Context, shard int) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	return runIDScript.Run(ctx, a.rdb, []string{a.keys.ToSave(shard)}).Text()
}

// Ping reports whether Redis answers.
func (a *Accepter) Ping(ctx context.Context) error {
	return classify("ping", a.rdb.Ping(ctx).Err())
}

// markSavedScript sets saved=1 on an idempotency record that still exists
// (creating one would leave a key without a TTL) and settles the seq the
// accept step marked in flight (KEYS[2], ARGV[1]).
var markSavedScript = redis.NewScript(`
redis.call('ZREM', KEYS[2], ARGV[1])
if redis.call('EXISTS', KEYS[1]) == 1 then redis.call('HSET', KEYS[1], 'saved', '1') return 1 end
return 0
`)

// SyncSaveWindow is how long a seq allocated for the synchronous path
// counts as in flight: the request must have committed its save by then
// (chat bounds the save with a shorter deadline), after which a seq with
// no row is a gap for good.
const SyncSaveWindow = time.Minute

// MarkSaved records that m is saved, so a retry of its client_msg_id is
// answered with ACK(saved), and settles allocated, the seq the accept step
// handed out for it (m.Seq may differ: a duplicate's original, or a
// resequenced save). The synchronous path calls it after its commit.
func (a *Accepter) MarkSaved(ctx context.Context, m *domain.Message, allocated int64) error {
	shard := a.keys.Shard(m.ConversationID)
	keys := []string{a.keys.Idem(shard, m.SenderID, m.ClientMsgID), a.keys.InFlight(shard, m.ConversationID)}
	return classify("mark saved", markSavedScript.Run(ctx, a.rdb, keys, allocated).Err())
}
