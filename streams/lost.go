package streams

import (
	"context"
	"log/slog"
	"math"
	"strings"
	"sync"
	"time"
	"unsafe"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"

	"github.com/nexo-im/nexo/domain"
)

// lostCheck finds messages that got ACK(accepted) and then vanished with a
// Redis master's unreplicated writes.
//
// Redis replicates asynchronously: a promoted replica (or a server restarted
// from an AOF written every second) holds a prefix of what the old master
// applied. The accept script writes the idempotency record, the seq and the
// stream entry in one step, so a message whose idempotency record is absent
// on the new server lost its stream entry too and will never reach the save
// stage — unless a save consumer read it from the old master in time. The
// check therefore remembers, per shard, what this process accepted in the
// last window; when the server answering for a shard changes (its run_id,
// returned by every fenced accept), it looks for each remembered record on
// the new server and, for each one missing, polls the database for the
// message for grace. What is still unsaved is counted and logged, one line
// per message, with everything needed to tell the sender.
//
// It only knows what this process accepted: a message accepted by a
// process that died too is not reported (docs/pipeline.md).
type lostCheck struct {
	rdb    redis.UniversalClient
	keys   Keys
	lookup SavedLookup
	log    *slog.Logger
	grace  time.Duration
	window time.Duration
	max    int

	lost    prometheus.Counter
	changes prometheus.Counter
	fenced  prometheus.Counter

	// probe asks the Redis server answering for a shard for its run_id
	// (nil: trim does not ask; tests).
	probe func(ctx context.Context, shard int) (string, error)
	// servers is the Accepter's tracker of which server answers a shard.
	servers *recordsWatch

	mu     sync.Mutex
	recent map[int]*acceptRing
	epoch  time.Time // recentAccept.at counts from here
}

// acceptRing holds a shard's recent accepts, oldest first, in a circular
// buffer: a sliding window of tens of thousands of entries, where a slice
// that drops its front would copy them all every time it grows.
type acceptRing struct {
	buf     []recentAccept
	head, n int
}

// push appends r, first dropping from the front what is older than window
// and what would exceed limit entries.
func (q *acceptRing) push(r recentAccept, window time.Duration, limit int) {
	for q.n > 0 && (q.n >= limit || r.at-q.buf[q.head].at > window) {
		q.buf[q.head] = recentAccept{}
		q.head = (q.head + 1) % len(q.buf)
		q.n--
	}
	if q.n == len(q.buf) {
		q.grow(limit)
	}
	q.buf[(q.head+q.n)%len(q.buf)] = r
	q.n++
}

func (q *acceptRing) grow(limit int) {
	next := make([]recentAccept, max(min(2*len(q.buf), limit), min(64, limit), 1))
	q.n = copy(next, q.all())
	q.buf, q.head = next, 0
}

// all returns the entries oldest first, in a new slice.
func (q *acceptRing) all() []recentAccept {
	out := make([]recentAccept, 0, q.n)
	for i := 0; i < q.n; i++ {
		out = append(out, q.buf[(q.head+i)%len(q.buf)])
	}
	return out
}

// recentAccept is what the check needs of one accept: the IDs to look it
// up and to log (its idempotency key is rebuilt from the sender and
// client_msg_id), its seq and send time, and when it was accepted (since
// lostCheck.epoch, on the monotonic clock). At thousands of messages a
// second the window holds hundreds of thousands of these, and the check is
// their only holder once the accept is answered, so the IDs share one
// string: 56 bytes plus about 150 of IDs per accept, where one string per
// ID and the key took 136 plus about 250 (and a whole domain.Message 304).
type recentAccept struct {
	ids         string    // server_msg_id, client_msg_id, conversation_id, sender_id, recv_id, group_id, back to back
	ends        [5]uint16 // where each of the first five ends in ids
	seq, sendAt int64
	at          time.Duration
}

// newRecentAccept packs m's IDs; ok is false for IDs too long to pack
// (over 64 KiB together, which no accepted message has).
func newRecentAccept(m *domain.Message, seq int64, at time.Duration) (r recentAccept, ok bool) {
	fields := [6]string{m.ServerMsgID, m.ClientMsgID, m.ConversationID, m.SenderID, m.RecvID, m.GroupID}
	var n int
	for _, f := range fields {
		n += len(f)
	}
	if n > math.MaxUint16 {
		return recentAccept{}, false
	}
	var b strings.Builder
	b.Grow(n)
	for i, f := range fields {
		b.WriteString(f)
		if i < len(r.ends) {
			r.ends[i] = uint16(b.Len())
		}
	}
	r.ids, r.seq, r.sendAt, r.at = b.String(), seq, m.SendAt, at
	return r, true
}

// id returns the i-th of the packed IDs (the order of recentAccept.ids).
func (r *recentAccept) id(i int) string {
	start, end := 0, len(r.ids)
	if i > 0 {
		start = int(r.ends[i-1])
	}
	if i < len(r.ends) {
		end = int(r.ends[i])
	}
	return r.ids[start:end]
}

func (r *recentAccept) serverMsgID() string    { return r.id(0) }
func (r *recentAccept) clientMsgID() string    { return r.id(1) }
func (r *recentAccept) conversationID() string { return r.id(2) }
func (r *recentAccept) senderID() string       { return r.id(3) }
func (r *recentAccept) recvID() string         { return r.id(4) }
func (r *recentAccept) groupID() string        { return r.id(5) }

func newLostCheck(a *Accepter, o acceptOptions) *lostCheck {
	log := o.log
	if log == nil {
		log = slog.Default()
	}
	grace := o.lostGrace
	if grace <= 0 {
		grace = 10 * time.Second
	}
	c := &lostCheck{
		rdb: a.rdb, keys: a.keys, lookup: o.lookup, log: log, grace: grace, window: 30 * time.Second, max: 50000,
		lost: prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: "nexo", Name: "accept_lost_total",
			Help: "Messages that got ACK(accepted) and were lost with a Redis master's unreplicated writes (each also logged).",
		}),
		changes: prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: "nexo", Name: "redis_shard_server_changes_total",
			Help: "Times the Redis server answering for a stream shard changed (failover, restart, slot migration).",
		}),
		fenced: prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: "nexo", Name: "seq_allocators_fenced_total",
			Help: "Seq allocators found written by another Redis server and moved to a fresh database lease.",
		}),
		servers: a.records, recent: map[int]*acceptRing{}, epoch: time.Now(),
	}
	if o.reg != nil {
		o.reg.MustRegister(c.lost, c.changes, c.fenced)
	}
	return c
}

// record remembers an accepted message of shard.
func (c *lostCheck) record(shard int, m *domain.Message, seq int64) {
	if c == nil {
		return
	}
	r, ok := newRecentAccept(m, seq, time.Since(c.epoch))
	if !ok {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	q := c.recent[shard]
	if q == nil {
		q = &acceptRing{}
		c.recent[shard] = q
	}
	q.push(r, c.window, c.max)
}

// trim drops what push would drop at the next accept — entries older than
// the window — and gives back the memory of rings a load grew: an empty
// ring goes, a ring at most a quarter full shrinks. After a load stops no
// accept comes to drop the last window's entries, which would otherwise
// hold the ring and every string it names for good.
//
// Entries are dropped only once the shard's server is known to be the one
// that took them: a process is idle during a Redis outage too, and the
// first accept after a failover checks everything remembered (serverChanged),
// however old. So trim first asks the server of each shard it would drop
// from for its run_id (probe): a server that does not answer keeps the
// shard's entries for a later trim, and a changed one starts the check a
// next accept would have started.
//
// It returns about how many bytes it let go: the entries dropped with the
// strings they name (recentAcceptBytes each) and the ring slots given back.
func (c *lostCheck) trim(ctx context.Context) int64 {
	if c == nil {
		return 0
	}
	now := time.Since(c.epoch)
	c.mu.Lock()
	var due []int // shards with entries past the window whose server we know
	for shard, q := range c.recent {
		if q.n > 0 && now-q.buf[q.head].at > c.window && c.servers.server(shard) != "" {
			due = append(due, shard)
		}
	}
	c.mu.Unlock()
	keep := map[int]bool{}
	for _, shard := range due {
		if c.probe == nil {
			continue
		}
		node, err := c.probe(ctx, shard)
		if err != nil || node == "" {
			keep[shard] = true
			continue
		}
		if prev := c.servers.saw(shard, node, time.Now()); prev != "" {
			c.serverChanged(shard, prev, node) // takes the shard's entries to its check
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	var dropped, slots int
	for shard, q := range c.recent {
		for !keep[shard] && q.n > 0 && now-q.buf[q.head].at > c.window {
			q.buf[q.head] = recentAccept{}
			q.head = (q.head + 1) % len(q.buf)
			q.n--
			dropped++
		}
		switch {
		case q.n == 0:
			slots += len(q.buf)
			delete(c.recent, shard)
		case q.n <= len(q.buf)/4 && len(q.buf) > 64:
			next := make([]recentAccept, max(64, 2*q.n))
			slots += len(q.buf) - len(next)
			q.n = copy(next, q.all())
			q.buf, q.head = next, 0
		}
	}
	return int64(dropped)*recentAcceptBytes + int64(slots)*int64(unsafe.Sizeof(recentAccept{}))
}

// recentAcceptBytes is about what one remembered accept's IDs take (three
// IDs, a conversation ID and two user IDs in one string).
const recentAcceptBytes = 160

// remembered is how many accepts the check holds and the ring slots they
// take, over all shards.
func (c *lostCheck) remembered() (entries, slots int) {
	if c == nil {
		return 0, 0
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, q := range c.recent {
		entries += q.n
		slots += len(q.buf)
	}
	return entries, slots
}

// serverChanged starts a check of what this process accepted on shard
// before its server changed from prev to node (recordsWatch.saw).
func (c *lostCheck) serverChanged(shard int, prev, node string) {
	if c == nil {
		return
	}
	c.mu.Lock()
	// Everything remembered so far was accepted by an earlier server.
	var before []recentAccept
	if q := c.recent[shard]; q != nil {
		before = q.all()
	}
	delete(c.recent, shard)
	c.mu.Unlock()
	c.changes.Inc()
	c.log.Warn("redis server of a stream shard changed (failover, restart or slot migration): checking recent accepts",
		"shard", shard, "old_run_id", prev, "new_run_id", node, "recent_accepts", len(before))
	go c.check(shard, before)
}

// staleAllocator logs an allocator the fence moved to a fresh lease.
func (c *lostCheck) staleAllocator(shard int, conversationID, cur string, base int64) {
	if c == nil {
		return
	}
	c.fenced.Inc()
	c.log.Info("seq allocator written by another redis server: current block retired, fresh lease installed",
		"shard", shard, "conversation_id", conversationID, "allocator_cur", cur, "lease_base", base)
}

func (c *lostCheck) check(shard int, before []recentAccept) {
	ctx, cancel := context.WithTimeout(context.Background(), c.grace+30*time.Second)
	defer cancel()
	missing := c.missingRecords(ctx, shard, before)
	if len(missing) == 0 {
		c.log.Info("no accepted message lost on shard", "shard", shard, "checked", len(before))
		return
	}
	// A save consumer may have read an entry from the old master before it
	// died and still be committing it: give the database grace.
	deadline := time.Now().Add(c.grace)
	for {
		missing = c.unsaved(ctx, missing)
		if len(missing) == 0 || time.Now().After(deadline) || ctx.Err() != nil {
			break
		}
		select {
		case <-ctx.Done():
		case <-time.After(min(time.Second, c.grace/4)):
		}
	}
	for _, r := range missing {
		c.lost.Inc()
		c.log.Error("accepted message lost with a redis failover: its accept did not reach the new master and it is not saved; a retry with the same client_msg_id is saved once",
			"shard", shard, "conversation_id", r.conversationID(), "seq", r.seq,
			"server_msg_id", r.serverMsgID(), "client_msg_id", r.clientMsgID(),
			"sender_id", r.senderID(), "recv_id", r.recvID(), "group_id", r.groupID(),
			"send_at", r.sendAt, "accepted_at", c.epoch.Add(r.at).UnixMilli())
	}
}

// missingRecords returns the accepts of shard whose idempotency record is
// not on the server that answers for it now (pipelined EXISTS; a cluster
// client splits the pipeline by slot).
func (c *lostCheck) missingRecords(ctx context.Context, shard int, rs []recentAccept) []recentAccept {
	var out []recentAccept
	for start := 0; start < len(rs); start += 500 {
		chunk := rs[start:min(start+500, len(rs))]
		cmds := make([]*redis.IntCmd, len(chunk))
		_, _ = c.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
			for i, r := range chunk {
				cmds[i] = p.Exists(ctx, c.keys.Idem(shard, r.senderID(), r.clientMsgID()))
			}
			return nil
		})
		for i, cmd := range cmds {
			// An error (the new master not answering yet) counts as
			// missing: the database lookup below decides.
			if n, err := cmd.Result(); err != nil || n == 0 {
				out = append(out, chunk[i])
			}
		}
	}
	return out
}

// unsavedChunk bounds one lookup's IN list.
const unsavedChunk = 256

// unsaved returns the accepts with no saved message of their sender and
// client_msg_id (the original, or a retry that replaced it), one query per
// unsavedChunk accepts; a chunk whose query fails counts as unsaved (the
// next poll asks again).
func (c *lostCheck) unsaved(ctx context.Context, rs []recentAccept) []recentAccept {
	var out []recentAccept
	for len(rs) > 0 {
		chunk := rs[:min(len(rs), unsavedChunk)]
		rs = rs[len(chunk):]
		keys := make([]domain.ClientMsgKey, len(chunk))
		for i, r := range chunk {
			keys[i] = domain.ClientMsgKey{SenderID: r.senderID(), ClientMsgID: r.clientMsgID()}
		}
		found, err := c.lookup.ByClientMsgIDs(ctx, keys)
		for i, r := range chunk {
			if _, ok := found[keys[i]]; err != nil || !ok {
				out = append(out, r)
			}
		}
	}
	return out
}
