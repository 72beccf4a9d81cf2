package streams_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/nexo-im/nexo/domain"
	"github.com/nexo-im/nexo/store"
	"github.com/nexo-im/nexo/store/storetest"
	"github.com/nexo-im/nexo/streams"
)

type fixture struct {
	rdb  redis.UniversalClient
	keys streams.Keys
	seqs *store.SeqRepo
	acc  *streams.Accepter
}

func newFixture(t *testing.T, block int64) *fixture {
	rdb, prefix := storetest.Redis(t)
	return newFixtureOn(t, rdb, prefix, block)
}

// onTopologies runs f once per Redis topology (standalone, cluster,
// sentinel) with a fixture of its own.
func onTopologies(t *testing.T, block int64, f func(t *testing.T, f *fixture)) {
	for name, open := range storetest.RedisTopologies() {
		t.Run(name, func(t *testing.T) {
			rdb, keys := open(t)
			f(t, newFixtureOn(t, rdb, keys.Prefix, block))
		})
	}
}

func newFixtureOn(t testing.TB, rdb redis.UniversalClient, prefix string, block int64) *fixture {
	seqs := store.NewSeqRepo(storetest.MySQL(t))
	keys := streams.NewKeys(prefix, 4)
	return &fixture{rdb: rdb, keys: keys, seqs: seqs, acc: streams.NewAccepter(rdb, keys, seqs, block, time.Hour)}
}

func msg(sender, recv, clientID string) domain.Message {
	return domain.Message{
		ServerMsgID: "srv-" + sender + "-" + clientID, ClientMsgID: clientID,
		ConversationID: domain.SingleConversationID(sender, recv), SenderID: sender, RecvID: recv,
		SessionType: domain.SessionSingle, MsgType: domain.MsgText, Content: domain.Content{Text: "x"},
		SendAt: time.Now().UnixMilli(),
	}
}

// TestAcceptedEntryCarriesInstanceID: the stream entry of an accepted
// message names the instance that accepted it (XRANGE shows it), on the
// script of one call and on the batched one.
func TestAcceptedEntryCarriesInstanceID(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, 100)
	acc := streams.NewAccepter(f.rdb, f.keys, f.seqs, 100, time.Hour, streams.WithInstanceID("web1-8080"))
	var wg sync.WaitGroup
	for i := range 20 { // concurrent: the batched script too, when calls coincide
		wg.Go(func() {
			if _, err := acc.Accept(ctx, streams.AcceptRequest{Msg: msg("a", "b", fmt.Sprint("c", i)), Route: streams.DeliverFirst, Append: true}); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	xs := f.rdb.XRange(ctx, f.keys.ToDeliver(f.keys.Shard(domain.SingleConversationID("a", "b"))), "-", "+").Val()
	if len(xs) != 20 {
		t.Fatalf("%d entries, want 20", len(xs))
	}
	for _, x := range xs {
		if x.Values["instance_id"] != "web1-8080" {
			t.Fatalf("entry %s fields %v: no instance_id", x.ID, x.Values)
		}
		if e, err := streams.Decode(x); err != nil || e.InstanceID != "web1-8080" {
			t.Fatalf("decoded %+v, %v", e, err)
		}
	}
}

func TestAcceptAllocatesClaimsAndAppends(t *testing.T) {
	onTopologies(t, 3, testAcceptAllocatesClaimsAndAppends)
}

func testAcceptAllocatesClaimsAndAppends(t *testing.T, f *fixture) {
	ctx := context.Background()
	var seqs []int64
	for i := 0; i < 7; i++ {
		a, err := f.acc.Accept(ctx, streams.AcceptRequest{Msg: msg("a", "b", fmt.Sprint("c", i)), Route: streams.SaveFirst, Append: true})
		if err != nil {
			t.Fatal(err)
		}
		if a.Duplicate {
			t.Fatalf("fresh message reported duplicate: %+v", a)
		}
		seqs = append(seqs, a.Seq)
	}
	for i, s := range seqs {
		if s != int64(i+1) {
			t.Fatalf("seqs = %v, want 1..7 across three leases of 3", seqs)
		}
	}
	conv := domain.SingleConversationID("a", "b")
	if r, _ := f.seqs.Reserved(ctx, conv); r != 9 {
		t.Errorf("reserved = %d, want 9", r)
	}
	shard := f.keys.Shard(conv)
	if n := f.rdb.XLen(ctx, f.keys.ToSave(shard)).Val(); n != 7 {
		t.Errorf("to_save has %d entries, want 7", n)
	}
	// The entry decodes to the message with its seq.
	xs := f.rdb.XRange(ctx, f.keys.ToSave(shard), "-", "+").Val()
	e, err := streams.Decode(xs[6])
	if err != nil || e.Msg.Seq != 7 || e.Msg.ClientMsgID != "c6" || e.Route != streams.SaveFirst || e.Msg.Content.Text != "x" {
		t.Fatalf("decoded %+v err %v", e, err)
	}

	// A retry returns the original values and appends nothing.
	retry := msg("a", "b", "c2")
	retry.ServerMsgID, retry.SendAt = "other-id", 1
	a, err := f.acc.Accept(ctx, streams.AcceptRequest{Msg: retry, Route: streams.SaveFirst, Append: true})
	if err != nil || !a.Duplicate || a.Seq != 3 || a.ServerMsgID != "srv-a-c2" || a.Saved {
		t.Fatalf("retry = %+v err %v", a, err)
	}
	if n := f.rdb.XLen(ctx, f.keys.ToSave(shard)).Val(); n != 7 {
		t.Errorf("retry appended: %d entries", n)
	}
	// Deliver-first goes to the deliver stream; Append=false appends nowhere.
	if _, err := f.acc.Accept(ctx, streams.AcceptRequest{Msg: msg("a", "b", "d1"), Route: streams.DeliverFirst, Append: true}); err != nil {
		t.Fatal(err)
	}
	if n := f.rdb.XLen(ctx, f.keys.ToDeliver(shard)).Val(); n != 1 {
		t.Errorf("to_deliver has %d entries", n)
	}
	if a, err := f.acc.Accept(ctx, streams.AcceptRequest{Msg: msg("a", "b", "sync1")}); err != nil || a.Seq != 9 {
		t.Errorf("sync accept = %+v, %v", a, err)
	}
	if n := f.rdb.XLen(ctx, f.keys.ToSave(shard)).Val() + f.rdb.XLen(ctx, f.keys.ToDeliver(shard)).Val(); n != 8 {
		t.Errorf("sync accept appended: %d entries", n)
	}
}

func TestSeqsNeverReusedAfterRedisLosesEverything(t *testing.T) {
	onTopologies(t, 100, testSeqsNeverReusedAfterRedisLosesEverything)
}

func testSeqsNeverReusedAfterRedisLosesEverything(t *testing.T, f *fixture) {
	ctx := context.Background()
	issued := map[int64]bool{}
	var last int64
	accept := func(id string) {
		a, err := f.acc.Accept(ctx, streams.AcceptRequest{Msg: msg("x", "y", id), Route: streams.SaveFirst, Append: true})
		if err != nil {
			t.Fatal(err)
		}
		if issued[a.Seq] || a.Seq <= last {
			t.Fatalf("seq %d reissued or not increasing (last %d)", a.Seq, last)
		}
		issued[a.Seq], last = true, a.Seq
	}
	for i := 0; i < 5; i++ {
		accept(fmt.Sprint("before", i))
	}
	// Wipe every key of this test (FLUSHALL scoped to the test's prefix, so
	// parallel tests keep theirs).
	storetest.DeletePrefix(f.rdb, prefixOf(f))
	for i := 0; i < 5; i++ {
		accept(fmt.Sprint("after", i))
	}
	if last <= 100 {
		t.Fatalf("after the wipe seqs resumed at %d, not above the reserved ceiling 100", last)
	}
}

func prefixOf(f *fixture) string {
	k := f.keys.Seq(0, "x")
	return k[:len(k)-len(":{s0}:seq:x")]
}

func TestRetireMovesAllocatorAboveFallbackSeq(t *testing.T) {
	onTopologies(t, 1000, testRetireMovesAllocatorAboveFallbackSeq)
}

func testRetireMovesAllocatorAboveFallbackSeq(t *testing.T, f *fixture) {
	ctx := context.Background()
	a1, _ := f.acc.Accept(ctx, streams.AcceptRequest{Msg: msg("p", "q", "1"), Route: streams.SaveFirst, Append: true})
	conv := domain.SingleConversationID("p", "q")
	// The synchronous fallback leased one seq straight from the database.
	l, err := f.seqs.Lease(ctx, conv, 1)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.acc.Retire(ctx, conv, l.Ceiling); err != nil {
		t.Fatal(err)
	}
	a2, err := f.acc.Accept(ctx, streams.AcceptRequest{Msg: msg("p", "q", "2"), Route: streams.SaveFirst, Append: true})
	if err != nil || a2.Seq <= l.Ceiling || a1.Seq >= l.Ceiling {
		t.Fatalf("a1=%d fallback=%d a2=%d err=%v: the next seq must follow the fallback's", a1.Seq, l.Ceiling, a2.Seq, err)
	}
}

func TestConcurrentSendersGetUniqueOrderedSeqs(t *testing.T) {
	f := newFixture(t, 50)
	ctx := context.Background()
	const senders, each = 50, 200
	var mu sync.Mutex
	all := map[int64]string{}
	perSender := make([][]int64, senders)
	var wg sync.WaitGroup
	for s := 0; s < senders; s++ {
		wg.Add(1)
		go func(s int) {
			defer wg.Done()
			for i := 0; i < each; i++ {
				m := msg(fmt.Sprint("u", s), "room", fmt.Sprint(i))
				m.ConversationID = domain.GroupConversationID("room")
				a, err := f.acc.Accept(ctx, streams.AcceptRequest{Msg: m, Route: streams.SaveFirst, Append: true})
				if err != nil {
					t.Error(err)
					return
				}
				perSender[s] = append(perSender[s], a.Seq)
				mu.Lock()
				if prev, dup := all[a.Seq]; dup {
					t.Errorf("seq %d issued to %s and u%d", a.Seq, prev, s)
				}
				all[a.Seq] = fmt.Sprint("u", s)
				mu.Unlock()
			}
		}(s)
	}
	wg.Wait()
	if len(all) != senders*each {
		t.Fatalf("%d seqs for %d messages", len(all), senders*each)
	}
	// One process under a burst burns no lease: the seqs are exactly 1..n.
	for s := int64(1); s <= senders*each; s++ {
		if _, ok := all[s]; !ok {
			t.Fatalf("seq %d was skipped: a lease was wasted under contention", s)
		}
	}
	for s, seqs := range perSender {
		for i := 1; i < len(seqs); i++ {
			if seqs[i] <= seqs[i-1] {
				t.Fatalf("sender %d: seq %d after %d", s, seqs[i], seqs[i-1])
			}
		}
	}
}

// TestFenceNeverReissuesSeqsLostWithAMaster: a promoted replica (or a
// restart from an old AOF) holds an allocator that is behind what the old
// master issued. The allocator carries the run_id of the server that last
// wrote it; on another server the accept leases a fresh block from the
// database instead of issuing from the old one. Without the fence the same
// state hands out seqs again — the hazard the fence exists for.
func TestFenceNeverReissuesSeqsLostWithAMaster(t *testing.T) {
	onTopologies(t, 100, testFenceNeverReissuesSeqsLostWithAMaster)
}

func testFenceNeverReissuesSeqsLostWithAMaster(t *testing.T, f *fixture) {
	ctx := context.Background()
	conv := domain.SingleConversationID("a", "b")
	shard := f.keys.Shard(conv)
	issued := map[int64]bool{}
	for i := 0; i < 10; i++ {
		a, err := f.acc.Accept(ctx, streams.AcceptRequest{Msg: msg("a", "b", fmt.Sprint("c", i)), Route: streams.SaveFirst, Append: true})
		if err != nil {
			t.Fatal(err)
		}
		issued[a.Seq] = true
	}
	// The replica saw only the first 4 accepts; it runs as another server.
	lostState := func() {
		if err := f.rdb.HSet(ctx, f.keys.Seq(shard, conv), "cur", 4, "node", "0000000000000000000000000000000000000000").Err(); err != nil {
			t.Fatal(err)
		}
	}
	lostState()
	a, err := f.acc.Accept(ctx, streams.AcceptRequest{Msg: msg("a", "b", "after"), Route: streams.SaveFirst, Append: true})
	if err != nil {
		t.Fatal(err)
	}
	if issued[a.Seq] || a.Seq <= 100 {
		t.Fatalf("after the server change the accept got seq %d; want a fresh lease above the database's 100", a.Seq)
	}
	if r, _ := f.seqs.Reserved(ctx, conv); r != 200 {
		t.Errorf("reserved = %d, want 200 (one fresh block)", r)
	}

	unfenced := streams.NewAccepter(f.rdb, f.keys, f.seqs, 100, time.Hour, streams.WithoutFence())
	lostState()
	b, err := unfenced.Accept(ctx, streams.AcceptRequest{Msg: msg("a", "b", "unfenced"), Route: streams.SaveFirst, Append: true})
	if err != nil {
		t.Fatal(err)
	}
	if b.Seq != 5 {
		t.Fatalf("unfenced accept got %d; the scenario should reproduce the reissue of 5", b.Seq)
	}
}

// Concurrent accepts on every topology go out in batches (one script call
// per shard on a cluster's nodes): every message gets a seq of its own in
// its conversation, and a retry gets its original's.
func TestConcurrentBatchedAcceptsOnTopologies(t *testing.T) {
	onTopologies(t, 1000, func(t *testing.T, f *fixture) {
		ctx := context.Background()
		const senders, each = 16, 25
		type key struct {
			conv string
			seq  int64
		}
		var mu sync.Mutex
		seen := map[key]string{}
		var wg sync.WaitGroup
		for s := range senders {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := range each {
					m := msg(fmt.Sprint("u", s), fmt.Sprint("peer", i%4), fmt.Sprint("c", i))
					first, err := f.acc.Accept(ctx, streams.AcceptRequest{Msg: m, Route: streams.SaveFirst, Append: true})
					if err != nil {
						t.Error(err)
						return
					}
					retry := m
					retry.ServerMsgID = "retry"
					again, err := f.acc.Accept(ctx, streams.AcceptRequest{Msg: retry, Route: streams.SaveFirst, Append: true})
					if err != nil || first.Duplicate || !again.Duplicate || again.Seq != first.Seq || again.ServerMsgID != m.ServerMsgID {
						t.Errorf("%s: first %+v, retry %+v, %v", m.ClientMsgID, first, again, err)
						return
					}
					mu.Lock()
					k := key{m.ConversationID, first.Seq}
					if prev, dup := seen[k]; dup {
						t.Errorf("seq %d of %s issued to %s and %s", first.Seq, m.ConversationID, prev, m.ServerMsgID)
					}
					seen[k] = m.ServerMsgID
					mu.Unlock()
				}
			}()
		}
		wg.Wait()
		if len(seen) != senders*each {
			t.Fatalf("%d seqs for %d messages", len(seen), senders*each)
		}
	})
}
