package streams

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// recordsWatch knows which Redis server (run_id) answers for each shard,
// and since when the idempotency records the accept step wrote are whole:
// every record written since then is still in Redis until its ttl. It is
// the Accepter's one tracker of shard servers; the lost-message check
// (lostCheck) reads it too.
//
// since starts at the Accepter's creation (earlier losses — a Redis
// restarted before this process — are not this process's to know;
// LearnRecordsKept may move it back) and moves to now whenever a shard's
// accept is answered by another Redis server than before (a failover, a
// restart, a slot migration), whose data may lack what the old one took.
//
// It sees a change only on the first accept the new server answers for
// this process, so that one accept may still have trusted the old
// records; docs/pipeline.md, "Idempotency", says what such a send costs.
type recordsWatch struct {
	since atomic.Int64 // Unix ms

	mu    sync.Mutex
	nodes map[int]string
}

func newRecordsWatch(now time.Time) *recordsWatch {
	w := &recordsWatch{nodes: map[int]string{}}
	w.since.Store(now.UnixMilli())
	return w
}

// saw notes that node (a run_id; "" with the fence off, which says
// nothing) answered for shard at now. It returns the shard's previous
// server when this is a change, "" otherwise (the first server seen
// included).
func (w *recordsWatch) saw(shard int, node string, now time.Time) (changedFrom string) {
	if node == "" {
		return ""
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	prev := w.nodes[shard]
	w.nodes[shard] = node
	if prev == "" || prev == node {
		return ""
	}
	w.since.Store(now.UnixMilli())
	return prev
}

// server returns the run_id last seen answering for shard, "" if none.
func (w *recordsWatch) server(shard int) string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.nodes[shard]
}

// learn takes the servers of every shard as probed at now and the latest
// time since which each has held all it was given (started): since moves
// back to started unless a shard's server is not the one an accept saw,
// which counts as a change (saw).
func (w *recordsWatch) learn(nodes map[int]string, started, now time.Time) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for shard, node := range nodes {
		if prev := w.nodes[shard]; prev != "" && prev != node {
			w.since.Store(now.UnixMilli())
			return
		}
	}
	for shard, node := range nodes {
		w.nodes[shard] = node
	}
	if started.UnixMilli() < w.since.Load() {
		w.since.Store(started.UnixMilli())
	}
}

// RecordsKept says which idempotency records Redis certainly still holds:
// every one the accept step wrote (through any process with the same
// two_phase.idempotency_ttl) since since, for ttl after it was written.
// since is the later of this Accepter's creation (or what
// LearnRecordsKept learnt) and the last change of a shard's server it
// saw; ttl is two_phase.idempotency_ttl as read at start. A send whose
// client_msg_id was first accepted after since and less than ttl ago is
// answered by its record, so the database's duplicate lookup can be
// skipped (services/chat).
func (a *Accepter) RecordsKept() (since time.Time, ttl time.Duration) {
	return time.UnixMilli(a.records.since.Load()), a.idemTTL
}

// serverScript answers, of the server that runs it (KEYS[1] routes it to
// a shard's), its run_id, its uptime in seconds and master_replid2, which
// is all zeros unless the server was promoted from a replica since it
// started.
var serverScript = redis.NewScript(`local s = redis.call('INFO', 'server')
local r = redis.call('INFO', 'replication')
return {string.match(s, 'run_id:(%x+)') or '', string.match(s, 'uptime_in_seconds:(%d+)') or '',
  string.match(r, 'master_replid2:(%x+)') or ''}`)

// LearnRecordsKept asks every shard's Redis server when it started, so
// that RecordsKept counts from the latest start rather than from this
// process's: a server that was never promoted from a replica holds every
// record written to it since it started (a restart from an AOF or RDB
// file is a new start). A server promoted since its start may lack what
// its old master took just before the failover, and then nothing is
// learnt; so it is when a server does not answer (the error is returned).
// Call it once at start, before serving (cmd/app); not with the fence off.
func (a *Accepter) LearnRecordsKept(ctx context.Context) error {
	now := time.Now()
	nodes := map[int]string{}
	var started time.Time
	for shard := range a.keys.Shards() {
		res, err := serverScript.Run(ctx, a.rdb, []string{a.keys.ToSave(shard)}).StringSlice()
		if err != nil {
			return fmt.Errorf("shard %d's server: %w", shard, err)
		}
		if len(res) != 3 {
			return fmt.Errorf("shard %d's server: unexpected reply %q", shard, res)
		}
		up, err := strconv.ParseInt(res[1], 10, 64)
		if err != nil || res[0] == "" {
			return fmt.Errorf("shard %d's server: no run_id or uptime in %q", shard, res)
		}
		if strings.Trim(res[2], "0") != "" {
			return nil // promoted: its start says nothing of its data
		}
		if s := now.Add(-time.Duration(up) * time.Second); s.After(started) {
			started = s
		}
		nodes[shard] = res[0]
	}
	// uptime counts whole seconds: the start may be up to one later.
	a.records.learn(nodes, started.Add(time.Second), now)
	return nil
}
