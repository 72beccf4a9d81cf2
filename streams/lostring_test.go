package streams

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/redis/go-redis/v9"

	"github.com/nexo-im/nexo/domain"
	"github.com/nexo-im/nexo/store"
	"github.com/nexo-im/nexo/store/storetest"
)

// The ring keeps the newest accepts in order, at most limit of them and
// none older than the window before the newest.
func TestAcceptRingKeepsTheWindow(t *testing.T) {
	at := func(i int) recentAccept {
		return recentAccept{at: time.Duration(i) * time.Second, seq: int64(i)}
	}
	seqs := func(q *acceptRing) []int64 {
		var out []int64
		for _, r := range q.all() {
			out = append(out, r.seq)
		}
		return out
	}
	q := &acceptRing{}
	for i := 1; i <= 200; i++ {
		q.push(at(i), time.Hour, 100)
	}
	if got := seqs(q); len(got) != 100 || got[0] != 101 || got[99] != 200 {
		t.Fatalf("limit: kept %d, from %v to %v", len(got), got[0], got[len(got)-1])
	}
	for i := 1; i < len(q.all()); i++ {
		if q.all()[i].seq != q.all()[i-1].seq+1 {
			t.Fatal("out of order")
		}
	}
	q.push(at(300), 30*time.Second, 100) // everything before 270 s is older than the window
	if got := seqs(q); len(got) != 1 || got[0] != 300 {
		t.Fatalf("window: kept %v", got)
	}
}

// trim drops what is older than the window without an accept to push it
// out, deletes an emptied ring and gives back the chunks a load filled,
// keeping the entries still in the window in order.
func TestLostCheckTrimGivesBackAPassedLoad(t *testing.T) {
	c := &lostCheck{window: 30 * time.Second, max: 50000, recent: map[int]*acceptRing{}, servers: newRecordsWatch(time.Now()),
		epoch: time.Now().Add(-time.Hour)}
	now := time.Since(c.epoch)
	for i := range 10000 { // shard 0: a load that ended two minutes ago
		c.recent[0] = ringPush(c.recent[0], recentAccept{at: now - 2*time.Minute + time.Duration(i), seq: int64(i)}, c)
	}
	for i := range 5000 { // shard 1: a load whose last 10 accepts are still in the window (and pushed out the rest)
		at := now - 2*time.Minute
		if i >= 4990 {
			at = now - time.Second
		}
		c.recent[1] = ringPush(c.recent[1], recentAccept{at: at, seq: int64(i)}, c)
	}
	if n, slots := c.remembered(); n != 10010 || slots < 10010 {
		t.Fatalf("before: %d entries in %d slots", n, slots)
	}
	if freed := c.trim(context.Background()); freed < 10000*int64(unsafe.Sizeof(recentAccept{})) {
		t.Fatalf("trim reports %d bytes let go for 10,000 entries dropped", freed)
	}
	if freed := c.trim(context.Background()); freed != 0 {
		t.Fatalf("a second trim reports %d bytes let go, want 0", freed)
	}
	if _, ok := c.recent[0]; ok {
		t.Fatal("a ring with nothing in the window is kept")
	}
	n, slots := c.remembered()
	if n != 10 || slots != ringChunk {
		t.Fatalf("after: %d entries in %d slots, want 10 in one chunk (%d)", n, slots, ringChunk)
	}
	for i, r := range c.recent[1].all() {
		if r.seq != int64(4990+i) {
			t.Fatalf("entry %d is seq %d, want %d", i, r.seq, 4990+i)
		}
	}
	var nilCheck *lostCheck
	nilCheck.trim(context.Background()) // the check off: nothing to do, no panic
}

func ringPush(q *acceptRing, r recentAccept, c *lostCheck) *acceptRing {
	if q == nil {
		q = &acceptRing{}
	}
	q.push(r, c.window, c.max)
	return q
}

// A remembered accept gives back each of its IDs as they were, empty ones
// and multi-byte ones included, and one whose IDs cannot be packed is
// refused rather than remembered wrong.
func TestRecentAcceptKeepsTheIDs(t *testing.T) {
	for _, m := range []domain.Message{
		{ServerMsgID: "srv-1", ClientMsgID: "c-1", ConversationID: "si_a_b", SenderID: "a", RecvID: "b", SendAt: 7},
		{ServerMsgID: "srv-2", ClientMsgID: "客户端-ü", ConversationID: "sg_g1", SenderID: "a", GroupID: "g1", SendAt: 8},
		{ClientMsgID: "only"},
		// Canonical UUIDs and a conversation ID the parties give are kept
		// short; an upper-case UUID, a conversation ID that is not the
		// parties' and a user ID with "_" are kept as they are.
		{ServerMsgID: "01a21bbf-6e86-71cc-8849-fb4d740abc5d", ClientMsgID: "01a21bbf-6e7d-7cf3-be31-76730000001f",
			ConversationID: "si_nb-r12_nb-s12", SenderID: "nb-s12", RecvID: "nb-r12", SendAt: 9},
		{ServerMsgID: "01a21bbf-6e86-71cc-8849-fb4d740abc5d", ClientMsgID: "01A21BBF-6E7D-7CF3-BE31-76730000001F",
			ConversationID: "sg_g_2", SenderID: "u_1", GroupID: "g_2"},
		{ServerMsgID: "s", ClientMsgID: "c", ConversationID: "si_a_c", SenderID: "a", RecvID: "b"},
		{ServerMsgID: "s", ClientMsgID: "c", ConversationID: domain.SingleConversationID("a_x", "b"), SenderID: "a_x", RecvID: "b"},
	} {
		r, ok := newRecentAccept(&m, 42, time.Second)
		if !ok {
			t.Fatalf("%+v: refused", m)
		}
		got := [6]string{r.serverMsgID(), r.clientMsgID(), r.conversationID(), r.senderID(), r.recvID(), r.groupID()}
		want := [6]string{m.ServerMsgID, m.ClientMsgID, m.ConversationID, m.SenderID, m.RecvID, m.GroupID}
		if got != want || r.seq != 42 || r.sendAt != m.SendAt || r.at != time.Second {
			t.Fatalf("packed %+v, read back %q seq %d send_at %d at %v", m, got, r.seq, r.sendAt, r.at)
		}
	}
	short := domain.Message{ServerMsgID: "01a21bbf-6e86-71cc-8849-fb4d740abc5d", ClientMsgID: "01a21bbf-6e7d-7cf3-be31-76730000001f",
		ConversationID: "si_nb-r12_nb-s12", SenderID: "nb-s12", RecvID: "nb-r12"}
	if r, _ := newRecentAccept(&short, 1, 0); len(r.ids) != 16+16+6+6 {
		t.Fatalf("a single chat between UUIDs packed into %d bytes, want %d", len(r.ids), 16+16+6+6)
	}
	long := domain.Message{ServerMsgID: "s", ClientMsgID: strings.Repeat("x", 1<<16)}
	if _, ok := newRecentAccept(&long, 1, 0); ok {
		t.Fatal("IDs over 64 KiB together were packed")
	}
}

type noneSaved struct{}

func (noneSaved) ByClientMsgIDs(context.Context, []domain.ClientMsgKey) (map[domain.ClientMsgKey]domain.Message, error) {
	return nil, nil
}

// The check rebuilds each remembered accept's idempotency key: after real
// accepts, every record is found on the server, and the one deleted (a
// write the server lost) is the one reported missing.
func TestLostCheckFindsTheAcceptsRecords(t *testing.T) {
	ctx := context.Background()
	rdb, keys, a := checkedAccepter(t, 2)
	var sent []domain.Message
	for i := range 20 {
		sender, recv := fmt.Sprint("u", i%3), fmt.Sprint("v", i%5)
		m := singleText(fmt.Sprint("srv-", i), fmt.Sprint("cli-", i), sender, recv)
		if _, err := a.Accept(ctx, AcceptRequest{Msg: m, Route: DeliverFirst, Append: true}); err != nil {
			t.Fatal(err)
		}
		sent = append(sent, m)
	}
	gone := sent[7]
	if n := rdb.Del(ctx, keys.Idem(keys.Shard(gone.ConversationID), gone.SenderID, gone.ClientMsgID)).Val(); n != 1 {
		t.Fatalf("deleting the idempotency record of %s removed %d keys", gone.ClientMsgID, n)
	}
	var checked int
	var missing []string
	for shard := range 2 {
		rs := a.lost.recent[shard].all()
		checked += len(rs)
		for _, r := range a.lost.missingRecords(ctx, shard, rs) {
			missing = append(missing, r.clientMsgID())
		}
	}
	if checked != len(sent) || len(missing) != 1 || missing[0] != gone.ClientMsgID {
		t.Fatalf("checked %d of %d accepts; missing %v, want [%s]", checked, len(sent), missing, gone.ClientMsgID)
	}
}

// An idle trim drops a shard's entries past the window only once the
// shard's server answered with the run_id that took them: a server that
// does not answer (an outage, when the process is idle too) keeps them for
// the check the next accept starts, and a server with another run_id
// starts that check at once, with every entry.
func TestIdleTrimKeepsWhatAFailoverMustCheck(t *testing.T) {
	ctx := context.Background()
	_, _, a := checkedAccepter(t, 1)
	for i := range 5 {
		m := singleText(fmt.Sprint("srv-", i), fmt.Sprint("cli-", i), "ann", "ben")
		if _, err := a.Accept(ctx, AcceptRequest{Msg: m, Route: DeliverFirst, Append: true}); err != nil {
			t.Fatal(err)
		}
	}
	c := a.lost
	if c.servers.server(0) == "" {
		t.Fatal("the accepts recorded no run_id for the shard")
	}
	c.epoch = c.epoch.Add(-time.Hour) // every entry is now past the window
	entries := func() int { n, _ := c.remembered(); return n }

	real := c.probe
	c.probe = func(context.Context, int) (string, error) { return "", fmt.Errorf("connection refused") }
	if c.trim(ctx); entries() != 5 {
		t.Fatalf("a server that does not answer: %d of 5 entries kept", entries())
	}
	c.probe = real
	if got, err := c.probe(ctx, 0); err != nil || got != c.servers.server(0) {
		t.Fatalf("probe answered %q (%v), the accepts saw %q", got, err, c.servers.server(0))
	}
	changes := testutil.ToFloat64(c.changes)
	c.probe = func(context.Context, int) (string, error) { return "another-server", nil }
	if c.trim(ctx); entries() != 0 || testutil.ToFloat64(c.changes) != changes+1 {
		t.Fatalf("a changed server: %d entries left, %v changes noted (want 0 and %v)", entries(), testutil.ToFloat64(c.changes), changes+1)
	}

	for i := range 3 { // the same server throughout: the trim drops them
		m := singleText(fmt.Sprint("srv2-", i), fmt.Sprint("cli2-", i), "ann", "ben")
		if _, err := a.Accept(ctx, AcceptRequest{Msg: m, Route: DeliverFirst, Append: true}); err != nil {
			t.Fatal(err)
		}
	}
	if entries() != 3 {
		t.Fatalf("%d of 3 new accepts remembered", entries())
	}
	c.probe = real
	c.mu.Lock()
	c.window = 0 // the new entries are past the window too
	c.mu.Unlock()
	if c.trim(ctx); entries() != 0 {
		t.Fatalf("the same server: %d entries kept past the window", entries())
	}
}

// Across chunks the ring keeps its order, takes at most one chunk more
// than its entries, and gives each chunk back once its last entry leaves.
func TestAcceptRingChunks(t *testing.T) {
	q := &acceptRing{}
	for i := range 3*ringChunk + 7 {
		q.push(recentAccept{at: time.Duration(i) * time.Millisecond, seq: int64(i)}, time.Hour, 1<<20)
	}
	all := q.all()
	for i, r := range all {
		if r.seq != int64(i) {
			t.Fatalf("entry %d is seq %d", i, r.seq)
		}
	}
	if len(all) != 3*ringChunk+7 || q.slots() != 4*ringChunk {
		t.Fatalf("%d entries in %d slots, want %d in %d", len(all), q.slots(), 3*ringChunk+7, 4*ringChunk)
	}
	freed := 0
	for range ringChunk + 1 {
		freed += q.dropFront()
	}
	if freed != ringChunk || q.slots() != 3*ringChunk || q.front().seq != ringChunk+1 {
		t.Fatalf("after dropping a chunk and one: freed %d, %d slots, front seq %d", freed, q.slots(), q.front().seq)
	}
}

// What the save stage saved leaves the ring: in order, the front goes at
// once and the chunks with it; out of order, the saved entry lets its IDs
// go and leaves the check's view, and goes with the front. An ID not held,
// or beyond the scan's limit, changes nothing.
func TestAcceptRingForgetsWhatIsSaved(t *testing.T) {
	id := func(i int) string { return fmt.Sprintf("01a21bbf-6e86-71cc-8849-%012x", i) }
	push := func(q *acceptRing, i int) {
		m := domain.Message{ServerMsgID: id(i), ClientMsgID: fmt.Sprint("c", i), ConversationID: "si_a_b", SenderID: "a", RecvID: "b"}
		if i%2 == 1 {
			m.ServerMsgID = fmt.Sprint("srv-", i) // not a UUID: kept as sent
		}
		r, _ := newRecentAccept(&m, int64(i), time.Duration(i))
		q.push(r, time.Hour, 1<<20)
	}
	c := &lostCheck{recent: map[int]*acceptRing{}}
	q := &acceptRing{}
	c.recent[3] = q
	for i := range 2*ringChunk + 10 {
		push(q, i)
	}
	key := func(i int) string {
		if i%2 == 1 {
			return fmt.Sprint("srv-", i)
		}
		return id(i)
	}
	// Saved out of order: 2 and 5 leave the view but hold their slots
	// behind the unsaved front.
	c.saved(3, []string{key(2), key(5), "not-held", id(1)}) // id(1) is "srv-1" in the ring, not the UUID
	if q.n != 2*ringChunk+10 || len(q.all()) != 2*ringChunk+8 {
		t.Fatalf("after two saved behind the front: %d entries, %d in view", q.n, len(q.all()))
	}
	for _, r := range q.all() {
		if r.seq == 2 || r.seq == 5 {
			t.Fatalf("seq %d is saved and still in view", r.seq)
		}
	}
	// The front saved: it and the saved entries right behind it go.
	c.saved(3, []string{key(0), key(1)})
	if q.n != 2*ringChunk+10-3 || q.front().seq != 3 {
		t.Fatalf("after the front saved: %d entries, front seq %d", q.n, q.front().seq)
	}
	// The rest saved in order: the ring is empty and keeps one chunk.
	var rest []string
	for i := 3; i < 2*ringChunk+10; i++ {
		if i != 5 {
			rest = append(rest, key(i))
		}
	}
	c.saved(3, rest)
	if q.n != 0 || q.slots() > ringChunk {
		t.Fatalf("all saved: %d entries left in %d slots", q.n, q.slots())
	}
	// The scan stops at its limit: an entry beyond it stays.
	for i := range savedScan + 1 {
		push(q, 10000+i)
	}
	c.saved(3, []string{key(10000 + savedScan)})
	if len(q.all()) != savedScan+1 {
		t.Fatalf("an entry beyond the scan's limit left the view: %d of %d", len(q.all()), savedScan+1)
	}
	c.saved(3, []string{key(10000 + savedScan - 1)})
	if len(q.all()) != savedScan {
		t.Fatalf("the last entry within the scan's limit stayed in view: %d of %d", len(q.all()), savedScan+1)
	}
	// An accept the check never hears saved holds the front: the saved
	// entries behind it are compacted away once they are half the ring, so
	// the ring holds about what is unsaved and the scan stays short.
	q = &acceptRing{}
	c.recent[3] = q
	const behind = 6 * savedScan
	for i := range behind + 1 {
		push(q, 20000+i)
		if i > 0 {
			c.saved(3, []string{key(20000 + i)})
		}
		if q.n > 2*ringChunk {
			t.Fatalf("after %d saved behind an unsaved front the ring holds %d entries", i, q.n)
		}
	}
	if all := q.all(); len(all) != 1 || all[0].seq != 20000 || q.slots() > 2*ringChunk {
		t.Fatalf("%d saved behind an unsaved front: %d in view (front seq %d), %d slots", behind, len(all), all[0].seq, q.slots())
	}
	c.saved(7, []string{key(10000)}) // a shard with nothing remembered
	var nilCheck *lostCheck
	nilCheck.saved(3, []string{key(10000)}) // the check off: nothing to do, no panic
}

// After real accepts, the messages the save stage reports saved are no
// longer remembered, so a failover's check looks only for the others.
func TestLostCheckForgetsSavedAccepts(t *testing.T) {
	ctx := context.Background()
	_, _, a := checkedAccepter(t, 2)
	savedOf := map[int][]string{}
	var unsaved []string
	for i := range 30 {
		sender, recv := fmt.Sprint("u", i%3), fmt.Sprint("v", i%5)
		m := singleText(uuid.NewString(), fmt.Sprint("cli-", i), sender, recv)
		acc, err := a.Accept(ctx, AcceptRequest{Msg: m, Route: SaveFirst, Append: true})
		if err != nil {
			t.Fatal(err)
		}
		if i%4 == 3 {
			unsaved = append(unsaved, m.ClientMsgID)
		} else {
			savedOf[acc.Shard] = append(savedOf[acc.Shard], m.ServerMsgID)
		}
	}
	for shard, ids := range savedOf {
		a.Saved(shard, ids)
	}
	var left []string
	for shard := range 2 {
		for _, r := range a.lost.recent[shard].all() {
			left = append(left, r.clientMsgID())
		}
	}
	slices.Sort(left)
	slices.Sort(unsaved)
	if !slices.Equal(left, unsaved) {
		t.Fatalf("remembered after the saves: %v, want the unsaved %v", left, unsaved)
	}
}

// checkedAccepter is an Accepter with the lost-message check on real
// Redis and MariaDB, over shards stream shards.
func checkedAccepter(t *testing.T, shards int) (redis.UniversalClient, Keys, *Accepter) {
	rdb, prefix := storetest.Redis(t)
	keys := NewKeys(prefix, shards)
	a := NewAccepter(rdb, keys, store.NewSeqRepo(storetest.MySQL(t)), 100, time.Hour,
		WithLostCheck(noneSaved{}, slog.New(slog.DiscardHandler), nil, time.Second))
	return rdb, keys, a
}

// singleText is a text message of a single chat, to accept.
func singleText(serverMsgID, clientMsgID, sender, recv string) domain.Message {
	return domain.Message{ServerMsgID: serverMsgID, ClientMsgID: clientMsgID,
		ConversationID: domain.SingleConversationID(sender, recv), SenderID: sender, RecvID: recv,
		SessionType: domain.SessionSingle, MsgType: domain.MsgText, Content: domain.Content{Text: "x"}, SendAt: time.Now().UnixMilli()}
}
