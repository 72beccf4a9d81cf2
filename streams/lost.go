package streams

import (
	"context"
	"log/slog"
	"math"
	"strings"
	"sync"
	"time"
	"unsafe"

	"github.com/google/uuid"
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

// acceptRing holds a shard's recent accepts, oldest first, in chunks of
// ringChunk entries: a sliding window of tens of thousands of entries
// that takes at most one partly used chunk more than its entries and
// gives a chunk back as soon as its last entry leaves (a circular buffer
// that doubles held up to twice its entries, and the old buffer's copy
// while growing). Entries marked saved leave with the front; when an
// unsaved one holds the front (an accept whose save the check did not hear
// of), the ring is compacted once they are half of it.
type acceptRing struct {
	chunks [][]recentAccept // each of capacity ringChunk (less under a smaller limit); the last may be partly filled
	head   int              // the oldest entry's index in chunks[0]
	n      int
	nsaved int // entries marked saved still held (behind an unsaved front)
}

// ringChunk is the entries per chunk: 28 KiB each.
const ringChunk = 512

// push appends r, first dropping from the front what is saved, what is
// older than window and what would exceed limit entries.
func (q *acceptRing) push(r recentAccept, window time.Duration, limit int) {
	for q.n > 0 && (q.front().saved || q.n >= limit || r.at-q.front().at > window) {
		q.dropFront()
	}
	last := len(q.chunks) - 1
	if last < 0 || len(q.chunks[last]) == cap(q.chunks[last]) {
		q.chunks = append(q.chunks, make([]recentAccept, 0, max(1, min(ringChunk, limit))))
		last++
	}
	q.chunks[last] = append(q.chunks[last], r)
	q.n++
}

// front is the oldest entry; q.n must be positive.
func (q *acceptRing) front() *recentAccept { return &q.chunks[0][q.head] }

// dropFront forgets the oldest entry and returns how many entry slots it
// gave back with it: a chunk's whole capacity once its last entry left,
// 0 otherwise.
func (q *acceptRing) dropFront() (slots int) {
	if q.front().saved {
		q.nsaved--
	}
	q.chunks[0][q.head] = recentAccept{} // its IDs may go now
	q.head++
	q.n--
	if q.head < len(q.chunks[0]) {
		return 0
	}
	if q.n > 0 || len(q.chunks) > 1 || len(q.chunks[0]) == cap(q.chunks[0]) {
		slots = cap(q.chunks[0])
		q.chunks[0] = nil
		q.chunks = q.chunks[1:]
		q.head = 0
	}
	return slots
}

// slots is how many entries the ring's chunks have room for.
func (q *acceptRing) slots() (n int) {
	for _, c := range q.chunks {
		n += cap(c)
	}
	return n
}

// all returns the entries not known to be saved, oldest first, in a new
// slice.
func (q *acceptRing) all() []recentAccept {
	out := make([]recentAccept, 0, q.n)
	q.scan(q.n, func(r *recentAccept) bool {
		if !r.saved {
			out = append(out, *r)
		}
		return true
	})
	return out
}

// scan calls f on at most limit entries from the oldest on, until f
// returns false.
func (q *acceptRing) scan(limit int, f func(*recentAccept) bool) {
	for i, c := range q.chunks {
		if i == 0 {
			c = c[q.head:]
		}
		for j := range c {
			if limit <= 0 || !f(&c[j]) {
				return
			}
			limit--
		}
	}
}

// markSaved marks saved the oldest unsaved entry among the first limit
// whose server_msg_id is id (in its packed form when packed), lets its IDs
// go, drops the saved entries at the front and compacts the ring when the
// saved ones it still holds are half of it. found is false when no entry
// matched.
func (q *acceptRing) markSaved(id string, packed bool, limit int) (found bool) {
	q.scan(limit, func(r *recentAccept) bool {
		if r.saved || (r.packed&packedServerUUID != 0) != packed || r.id(0) != id {
			return true
		}
		r.saved, r.ids, r.ends, found = true, "", [5]uint16{}, true
		return false
	})
	if !found {
		return false
	}
	q.nsaved++
	for q.n > 0 && q.front().saved {
		q.dropFront()
	}
	if q.nsaved >= ringChunk && 2*q.nsaved >= q.n {
		q.compact()
	}
	return true
}

// compact copies the unsaved entries, in order, into fresh chunks and lets
// the old ones go: each entry is copied at most once per ringChunk entries
// marked saved, and the scans that follow pass over no saved entry.
func (q *acceptRing) compact() {
	size := cap(q.chunks[0])
	var chunks [][]recentAccept
	q.scan(q.n, func(r *recentAccept) bool {
		if r.saved {
			return true
		}
		if len(chunks) == 0 || len(chunks[len(chunks)-1]) == size {
			chunks = append(chunks, make([]recentAccept, 0, size))
		}
		chunks[len(chunks)-1] = append(chunks[len(chunks)-1], *r)
		return true
	})
	q.chunks, q.head, q.n, q.nsaved = chunks, 0, q.n-q.nsaved, 0
}

// recentAccept is what the check needs of one accept: the IDs to look it
// up and to log (its idempotency key is rebuilt from the sender and
// client_msg_id), its seq and send time, and when it was accepted (since
// lostCheck.epoch, on the monotonic clock). At thousands of messages a
// second the window holds hundreds of thousands of these, and the check is
// their only holder once the accept is answered, so the IDs share one
// string, in their shortest exact form (newRecentAccept): 56 bytes plus about 64
// of IDs per accept for a single chat between UUIDv7s, where the IDs as
// sent took about 140 (one string per ID and the key, 136 plus 250).
type recentAccept struct {
	ids         string    // server_msg_id, client_msg_id, conversation_id, sender_id, recv_id, group_id, packed; "" once saved
	ends        [5]uint16 // where each of the first five ends in ids
	packed      uint8     // which IDs ids holds in a short form (packed*)
	saved       bool      // this process's save stage saved it (lostCheck.saved): it cannot be lost
	seq, sendAt int64
	at          time.Duration
}

// How newRecentAccept shortened an accept's IDs (recentAccept.packed).
const (
	packedServerUUID = 1 << iota // server_msg_id: the 16 bytes of a canonical UUID
	packedClientUUID             // client_msg_id: likewise
	packedSingleConv             // conversation_id: not kept, domain.SingleConversationID(sender, recv)
	packedGroupConv              // conversation_id: not kept, domain.GroupConversationID(group)
)

// newRecentAccept packs m's IDs; ok is false for IDs too long to pack
// (over 64 KiB together, which no accepted message has). It allocates the
// one string the IDs share and nothing else: it runs on every accept.
func newRecentAccept(m *domain.Message, seq int64, at time.Duration) (r recentAccept, ok bool) {
	fields := [6]string{m.ServerMsgID, m.ClientMsgID, m.ConversationID, m.SenderID, m.RecvID, m.GroupID}
	var uuids [2]uuid.UUID
	lens := [6]int{16, 16} // a packed UUID's bytes
	for i := range uuids {
		var canonical bool
		if uuids[i], canonical = canonicalUUID(fields[i]); canonical {
			r.packed |= 1 << i
		} else {
			lens[i] = len(fields[i])
		}
	}
	switch conv := fields[2]; {
	case m.GroupID == "" && m.RecvID != "" && domain.IsSingleConversationID(conv, m.SenderID, m.RecvID):
		r.packed |= packedSingleConv
		fields[2] = ""
	case m.GroupID != "" && domain.IsGroupConversationID(conv, m.GroupID):
		r.packed |= packedGroupConv
		fields[2] = ""
	}
	n := lens[0] + lens[1]
	for i := 2; i < len(fields); i++ {
		n += len(fields[i])
	}
	if n > math.MaxUint16 {
		return recentAccept{}, false
	}
	var b strings.Builder
	b.Grow(n)
	for i, f := range fields {
		if i < len(uuids) && r.packed&(1<<i) != 0 {
			b.Write(uuids[i][:])
		} else {
			b.WriteString(f)
		}
		if i < len(r.ends) {
			r.ends[i] = uint16(b.Len())
		}
	}
	r.ids, r.seq, r.sendAt, r.at = b.String(), seq, m.SendAt, at
	return r, true
}

// canonicalUUID parses s when it is a UUID in its canonical form (36
// characters, lower-case), the only form packed, so that reading it back
// gives the very string that was sent.
func canonicalUUID(s string) (uuid.UUID, bool) {
	if len(s) != 36 {
		return uuid.UUID{}, false
	}
	u, err := uuid.Parse(s)
	if err != nil || strings.ContainsAny(s, "ABCDEF") {
		return uuid.UUID{}, false
	}
	return u, true
}

// id returns the i-th of the packed fields (the order of recentAccept.ids).
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

// uuidOr returns field i, unpacked from its 16 bytes when flag says so.
func (r *recentAccept) uuidOr(i int, flag uint8) string {
	s := r.id(i)
	if r.packed&flag == 0 {
		return s
	}
	var u uuid.UUID
	copy(u[:], s)
	return u.String()
}

func (r *recentAccept) serverMsgID() string { return r.uuidOr(0, packedServerUUID) }
func (r *recentAccept) clientMsgID() string { return r.uuidOr(1, packedClientUUID) }
func (r *recentAccept) senderID() string    { return r.id(3) }
func (r *recentAccept) recvID() string      { return r.id(4) }
func (r *recentAccept) groupID() string     { return r.id(5) }

func (r *recentAccept) conversationID() string {
	switch {
	case r.packed&packedSingleConv != 0:
		return domain.SingleConversationID(r.senderID(), r.recvID())
	case r.packed&packedGroupConv != 0:
		return domain.GroupConversationID(r.groupID())
	}
	return r.id(2)
}

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

// savedScan bounds how far from the front saved looks for a message: the
// save stage saves a shard's entries in about the order they were
// accepted, so a message this process accepted is found among the first
// few, and one it did not accept (a save stage in another instance, an
// entry older than the window) costs at most this many comparisons.
const savedScan = 2048

// saved forgets the accepts of shard whose server_msg_id is among ids,
// which this process's save stage has just committed to the database: a
// saved message cannot be lost, and the check would only have found it
// saved (unsaved). Without this the check holds every accept of the last
// window, 30 s at the load's rate; with it, about the save stage's lag.
// An ID it does not hold is ignored.
func (c *lostCheck) saved(shard int, ids []string) {
	if c == nil || len(ids) == 0 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	q := c.recent[shard]
	for _, id := range ids {
		if q == nil || q.n == 0 {
			return
		}
		if u, ok := canonicalUUID(id); ok {
			q.markSaved(unsafe.String(&u[0], len(u)), true, savedScan)
		} else {
			q.markSaved(id, false, savedScan)
		}
	}
}

// trim drops what push would drop at the next accept — entries older than
// the window — and with them the chunks they emptied; an empty ring goes.
// After a load stops no accept comes to drop the last window's entries,
// which would otherwise hold the ring and every string it names for good.
//
// Entries are dropped only once the shard's server is known to be the one
// that took them: a process is idle during a Redis outage too, and the
// first accept after a failover checks everything remembered (serverChanged),
// however old. So trim first asks the server of each shard it would drop
// from for its run_id (probe): a server that does not answer keeps the
// shard's entries for a later trim, and a changed one starts the check a
// next accept would have started.
//
// It returns how many bytes it let go: the strings the dropped entries
// named and the chunks given back.
func (c *lostCheck) trim(ctx context.Context) int64 {
	if c == nil {
		return 0
	}
	now := time.Since(c.epoch)
	c.mu.Lock()
	var due []int // shards with entries past the window whose server we know
	for shard, q := range c.recent {
		if q.n > 0 && now-q.front().at > c.window && c.servers.server(shard) != "" {
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
	var ids, slots int
	for shard, q := range c.recent {
		for !keep[shard] && q.n > 0 && now-q.front().at > c.window {
			ids += len(q.front().ids)
			slots += q.dropFront()
		}
		if q.n == 0 {
			slots += q.slots()
			delete(c.recent, shard)
		}
	}
	return int64(ids) + int64(slots)*int64(unsafe.Sizeof(recentAccept{}))
}

// remembered is how many accepts the check holds (not known to be saved)
// and the ring slots they take, over all shards.
func (c *lostCheck) remembered() (entries, slots int) {
	if c == nil {
		return 0, 0
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, q := range c.recent {
		entries += q.n - q.nsaved
		slots += q.slots()
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
