package streams_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/nexo-im/nexo/store/storetest"
	"github.com/nexo-im/nexo/streams"
)

// TestConsumerContract runs the consumer contract on every Redis the
// product runs on: standalone, Redis Cluster, Sentinel and the embedded
// in-process server.
func TestConsumerContract(t *testing.T) {
	for name, open := range storetest.RedisBackends() {
		t.Run(name, func(t *testing.T) { consumerContract(t, open) })
	}
}

// consumerContract is what every stage built on streams.Consumer with the
// shared commit, retry and dead-letter helpers relies on, on the Redis
// open returns.
func consumerContract(t *testing.T, open storetest.RedisBackend) {
	cases := []struct {
		name string
		run  func(t *testing.T, b *bench)
	}{
		{"every entry is handled at least once", everyEntryHandled},
		{"acknowledged entries are not delivered again", ackedNotRedelivered},
		{"a failing entry is retried per the policy, then dead-lettered", failingEntryDeadLettered},
		{"a permanent failure is dead-lettered at once, within the length cap", deadLetterCapped},
		{"a batch error retries the batch in place", batchErrorRetried},
		{"a dead consumer's pending entries are claimed by a live one", deadConsumerClaimed},
		{"entries in a live consumer's hands are not taken from it", liveConsumerKeeps},
		{"entries are handled in stream order when nothing fails", orderKept},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			rdb, keys := open(t)
			c.run(t, newBench(t, rdb, keys.Prefix))
		})
	}
}

// bench is one stream, its group and dead-letter stream, and a record of
// what handlers saw.
type bench struct {
	t        *testing.T
	rdb      redis.UniversalClient
	in, dead string
	mu       sync.Mutex
	seen     map[string][]time.Time // entry ID -> when each delivery was handled
	order    []string               // IDs in the order handled
	by       map[string]string      // entry ID -> last consumer that handled it
}

const (
	group = "g"
	// minIdle is long enough that a live consumer's touches (every
	// minIdle/2) are not late on a loaded 2-core machine: at 150 ms a
	// peer once claimed a slow consumer's entries in CI.
	minIdle = 400 * time.Millisecond
	maxBody = 64
)

func newBench(t *testing.T, rdb redis.UniversalClient, prefix string) *bench {
	// One hash tag: the stream and its dead letters share a cluster slot.
	return &bench{t: t, rdb: rdb, in: prefix + ":{c}:in", dead: prefix + ":{c}:dead",
		seen: map[string][]time.Time{}, by: map[string]string{}}
}

// config is the consumer under test: 3 attempts, quick backoff.
func (b *bench) config(name string) streams.ConsumerConfig {
	return streams.ConsumerConfig{
		Stream: b.in, Group: group, Consumer: name, Count: 10, Block: 50 * time.Millisecond,
		ClaimMinIdle: minIdle, ClaimEvery: 20 * time.Millisecond,
		Retry:      streams.RetryPolicy{MaxAttempts: 3, Backoff: 10 * time.Millisecond, BackoffMax: 40 * time.Millisecond},
		DeadLetter: &streams.DeadLetters{Redis: b.rdb, Input: b.in, Group: group, Stream: b.dead, BodyField: "body", MaxBody: maxBody},
	}
}

// add appends n entries with a body of size bytes; their IDs in order.
func (b *bench) add(n, size int) []string {
	b.t.Helper()
	ids := make([]string, n)
	for i := range ids {
		id, err := b.rdb.XAdd(context.Background(), &redis.XAddArgs{Stream: b.in,
			Values: []any{"n", strconv.Itoa(i), "body", strings.Repeat("b", size)}}).Result()
		if err != nil {
			b.t.Fatal(err)
		}
		ids[i] = id
	}
	return ids
}

// handler records each entry and acknowledges those fail does not fail
// (nil fail: all), with the shared commit.
func (b *bench) handler(name string, fail func(redis.XMessage) error) streams.Handler {
	return func(ctx context.Context, batch []redis.XMessage) error {
		c := streams.Commit{Input: b.in, Group: group}
		failures := streams.Failures{}
		b.mu.Lock()
		for _, m := range batch {
			b.seen[m.ID] = append(b.seen[m.ID], time.Now())
			b.order = append(b.order, m.ID)
			b.by[m.ID] = name
			if fail != nil {
				if err := fail(m); err != nil {
					failures[m.ID] = err
					continue
				}
			}
			c.Ack = append(c.Ack, m.ID)
		}
		b.mu.Unlock()
		if err := c.Apply(ctx, b.rdb); err != nil {
			return err
		}
		return failures.Err()
	}
}

// run starts a consumer; the returned stop ends it and checks Run's result.
func (b *bench) run(cfg streams.ConsumerConfig, h streams.Handler) (stop func()) {
	c := streams.NewConsumer(b.rdb, cfg, slog.New(slog.NewTextHandler(io.Discard, nil)))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx, h) }()
	stopped := false
	stop = func() {
		if stopped {
			return
		}
		stopped = true
		cancel()
		if err := <-done; err != nil {
			b.t.Errorf("consumer %s: %v", cfg.Consumer, err)
		}
	}
	b.t.Cleanup(stop)
	return stop
}

// waitFor polls cond (under the record's lock) until it holds, failing
// after 10 s.
func (b *bench) waitFor(what string, cond func() bool) {
	b.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		b.mu.Lock()
		ok := cond()
		b.mu.Unlock()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			b.t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond) // polling the record with a deadline, not synchronising
	}
}

// pending counts the group's pending entries (-1 before the group exists).
func (b *bench) pending() int64 {
	p, err := b.rdb.XPending(context.Background(), b.in, group).Result()
	if err != nil {
		if strings.Contains(err.Error(), "NOGROUP") {
			return -1
		}
		b.t.Fatal(err)
	}
	return p.Count
}

func (b *bench) allSeen(ids []string) func() bool {
	return func() bool {
		for _, id := range ids {
			if len(b.seen[id]) == 0 {
				return false
			}
		}
		return true
	}
}

func everyEntryHandled(t *testing.T, b *bench) {
	before := b.add(25, 10)
	b.run(b.config("c1"), b.handler("c1", nil))
	after := b.add(25, 10)
	b.waitFor("all 50 entries handled", b.allSeen(append(before, after...)))
	b.waitFor("nothing pending", func() bool { return b.pending() == 0 })
}

func ackedNotRedelivered(t *testing.T, b *bench) {
	ids := b.add(20, 10)
	stop := b.run(b.config("c1"), b.handler("c1", nil))
	b.waitFor("all handled", b.allSeen(ids))
	stop()
	b.run(b.config("c1"), b.handler("c1", nil)) // a restart resumes its own pending entries
	b.run(b.config("c2"), b.handler("c2", nil)) // a peer reclaims idle ones
	time.Sleep(4 * minIdle)                     // several claim rounds: nothing may come again
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, id := range ids {
		if n := len(b.seen[id]); n != 1 {
			t.Errorf("%s handled %d times after its acknowledgement", id, n)
		}
	}
}

func failingEntryDeadLettered(t *testing.T, b *bench) {
	ids := b.add(5, 200)
	poison := ids[2]
	b.run(b.config("c1"), b.handler("c1", func(m redis.XMessage) error {
		if m.ID == poison {
			return errors.New("receiver answered 500")
		}
		return nil
	}))
	b.waitFor("the poison entry dead-lettered", func() bool { return b.rdb.XLen(context.Background(), b.dead).Val() == 1 })
	b.waitFor("nothing pending", func() bool { return b.pending() == 0 })
	b.mu.Lock()
	defer b.mu.Unlock()
	tries := b.seen[poison]
	if len(tries) != 3 {
		t.Fatalf("the failing entry was tried %d times, want max_attempts 3", len(tries))
	}
	for i := 1; i < len(tries); i++ {
		if gap := tries[i].Sub(tries[i-1]); gap < minIdle*9/10 {
			t.Errorf("retry %d came after %v, before the claim idle %v", i, gap, minIdle)
		}
	}
	for _, id := range ids {
		if id != poison && len(b.seen[id]) != 1 {
			t.Errorf("%s handled %d times", id, len(b.seen[id]))
		}
	}
	d := b.rdb.XRange(context.Background(), b.dead, "-", "+").Val()[0].Values
	if body, _ := d["body"].(string); len(body) != maxBody || d["body_bytes"] != "200" || d["n"] != "2" {
		t.Errorf("dead letter body %d bytes (body_bytes %v), n %v; want the entry's body cut to %d", len(body), d["body_bytes"], d["n"], maxBody)
	}
	if d["attempts"] != "3" || d["source_entry"] != poison || d["src"] != b.in || d["err"] != "receiver answered 500" {
		t.Errorf("dead letter %v", d)
	}
	if n := b.rdb.XLen(context.Background(), b.in).Val(); n != 5 {
		t.Errorf("input holds %d entries, want all 5 (DeleteInput off)", n)
	}
}

func deadLetterCapped(t *testing.T, b *bench) {
	cfg := b.config("c1")
	dl := *cfg.DeadLetter.(*streams.DeadLetters)
	dl.MaxLen, dl.DeleteInput = 4, true
	cfg.DeadLetter = &dl
	ids := b.add(10, 10)
	b.run(cfg, b.handler("c1", func(redis.XMessage) error { return streams.Permanent(errors.New("malformed")) }))
	b.waitFor("every entry handled", b.allSeen(ids))
	b.waitFor("nothing pending", func() bool { return b.pending() == 0 })
	// The cap is applied right after each park's commit: wait for the last.
	b.waitFor("the dead-letter stream trimmed", func() bool {
		return b.rdb.XLen(context.Background(), b.dead).Val() <= 4
	})
	b.mu.Lock()
	defer b.mu.Unlock()
	dead := b.rdb.XRange(context.Background(), b.dead, "-", "+").Val()
	if len(dead) != 4 || dead[3].Values["source_entry"] != ids[9] {
		t.Fatalf("dead-letter stream holds %d entries (want the newest 4): %v", len(dead), dead)
	}
	for _, id := range ids {
		if n := len(b.seen[id]); n != 1 {
			t.Errorf("%s handled %d times; a permanent failure is not retried", id, n)
		}
	}
	if n := b.rdb.XLen(context.Background(), b.in).Val(); n != 0 {
		t.Errorf("input holds %d entries, want none (DeleteInput)", n)
	}
}

func batchErrorRetried(t *testing.T, b *bench) {
	ids := b.add(5, 10)
	cfg := b.config("c1")
	cfg.Retry.MaxAttempts = 1 // whole-batch retries do not count against it
	tries := 0
	inner := b.handler("c1", nil)
	b.run(cfg, func(ctx context.Context, batch []redis.XMessage) error {
		if tries++; tries <= 2 {
			return errors.New("database away")
		}
		return inner(ctx, batch)
	})
	b.waitFor("the batch handled", b.allSeen(ids))
	b.waitFor("nothing pending", func() bool { return b.pending() == 0 })
	if n := b.rdb.XLen(context.Background(), b.dead).Val(); n != 0 {
		t.Fatalf("%d entries dead-lettered after batch errors", n)
	}
}

func deadConsumerClaimed(t *testing.T, b *bench) {
	ids := b.add(15, 10)
	if err := streams.EnsureGroup(context.Background(), b.rdb, b.in, group); err != nil {
		t.Fatal(err)
	}
	// "gone" reads everything and dies before acknowledging anything.
	read := time.Now()
	if err := b.rdb.XReadGroup(context.Background(), &redis.XReadGroupArgs{Group: group, Consumer: "gone",
		Streams: []string{b.in, ">"}, Count: 100}).Err(); err != nil {
		t.Fatal(err)
	}
	b.run(b.config("live"), b.handler("live", nil))
	b.waitFor("the dead consumer's entries handled", b.allSeen(ids))
	b.waitFor("nothing pending", func() bool { return b.pending() == 0 })
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, id := range ids {
		if b.by[id] != "live" || b.seen[id][0].Sub(read) < minIdle*9/10 {
			t.Errorf("%s handled by %q %v after the read; want by live after claim_min_idle", id, b.by[id], b.seen[id][0].Sub(read))
		}
	}
}

func liveConsumerKeeps(t *testing.T, b *bench) {
	ids := b.add(3, 10)
	release := make(chan struct{})
	slow := b.handler("slow", nil)
	b.run(b.config("slow"), func(ctx context.Context, batch []redis.XMessage) error {
		<-release // works on its batch for a long while
		return slow(ctx, batch)
	})
	b.waitFor("the slow consumer holding the entries", func() bool { return b.pending() == 3 })
	b.run(b.config("peer"), b.handler("peer", nil))
	time.Sleep(4 * minIdle) // several claim rounds of the peer
	// Keeping entries fresh is not delivering them again: no attempt spent.
	p, err := b.rdb.XPendingExt(context.Background(), &redis.XPendingExtArgs{Stream: b.in, Group: group, Start: "-", End: "+", Count: 10}).Result()
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range p {
		if e.RetryCount != 1 || e.Consumer != "slow" {
			t.Errorf("%s: %d deliveries, held by %q; want 1, by slow", e.ID, e.RetryCount, e.Consumer)
		}
	}
	close(release)
	b.waitFor("the batch finished", b.allSeen(ids))
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, id := range ids {
		if len(b.seen[id]) != 1 || b.by[id] != "slow" {
			t.Errorf("%s handled %d times, last by %q; the peer took it from a live consumer", id, len(b.seen[id]), b.by[id])
		}
	}
}

func orderKept(t *testing.T, b *bench) {
	ids := b.add(60, 10)
	b.run(b.config("c1"), b.handler("c1", nil))
	ids = append(ids, b.add(40, 10)...)
	b.waitFor("all handled", b.allSeen(ids))
	b.mu.Lock()
	defer b.mu.Unlock()
	if !slices.Equal(b.order, ids) {
		t.Fatalf("handled in order %v, want %v", b.order, ids)
	}
}

// TestRetryPolicy: the delay doubles per attempt up to the max; an entry
// is out of attempts at MaxAttempts deliveries, never with 0.
func TestRetryPolicy(t *testing.T) {
	p := streams.RetryPolicy{MaxAttempts: 3, Backoff: time.Second, BackoffMax: 5 * time.Second}
	for n, want := range map[int64]time.Duration{0: time.Second, 1: time.Second, 2: 2 * time.Second, 3: 4 * time.Second, 4: 5 * time.Second, 30: 5 * time.Second} {
		if got := p.Delay(n); got != want {
			t.Errorf("Delay(%d) = %v, want %v", n, got, want)
		}
	}
	if p.Exhausted(2) || !p.Exhausted(3) || (streams.RetryPolicy{}).Exhausted(1000) {
		t.Error("Exhausted: 3 attempts of 3 are out, 2 are not, and MaxAttempts 0 never is")
	}
	if (streams.Failures{}).Err() != nil {
		t.Error("no failures must be no error")
	}
	err := fmt.Errorf("save: %w", streams.Failures{"1-0": streams.Permanent(errors.New("malformed"))})
	var f streams.Failures
	if !errors.As(err, &f) || !streams.IsPermanent(f["1-0"]) || streams.IsPermanent(errors.New("x")) {
		t.Errorf("Failures and Permanent must survive wrapping: %v", err)
	}
}
