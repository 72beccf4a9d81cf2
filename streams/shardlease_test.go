package streams_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/nexo-im/nexo/store/storetest"
	"github.com/nexo-im/nexo/streams"
)

// waitExpired polls until shard's lease is gone (the owner "paused" past
// its TTL), with a deadline.
func waitExpired(t *testing.T, rdb redis.UniversalClient, key string) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for rdb.Exists(context.Background(), key).Val() == 1 {
		if time.Now().After(deadline) {
			t.Fatalf("lease %s never expired", key)
		}
		time.Sleep(10 * time.Millisecond) // polling with a deadline
	}
}

// pendingOnShard0 leaves one entry of shard 0's save stream pending for
// consumer "a" and returns the streams, its ID and a commit of it (ack and
// forward to next) under a fence.
func pendingOnShard0(t *testing.T, rdb redis.UniversalClient, keys streams.Keys) (in, next, id string, commit func(*streams.Fence) error) {
	t.Helper()
	ctx := context.Background()
	in, next = keys.ToSave(0), keys.ToDeliver(0)
	if err := streams.EnsureGroup(ctx, rdb, in, streams.GroupSave); err != nil {
		t.Fatal(err)
	}
	id = rdb.XAdd(ctx, &redis.XAddArgs{Stream: in, Values: map[string]any{"seq": 1}}).Val()
	if err := rdb.XReadGroup(ctx, &redis.XReadGroupArgs{Group: streams.GroupSave, Consumer: "a", Streams: []string{in, ">"}}).Err(); err != nil {
		t.Fatal(err)
	}
	commit = func(f *streams.Fence) error {
		return streams.Commit{Input: in, Group: streams.GroupSave, Ack: []string{id}, Next: next,
			ToNext: []streams.Entry{{ID: id}}, Fence: f}.Apply(ctx, rdb)
	}
	return in, next, id, commit
}

// TestShardLeaseFencesAPausedOwner: an owner that lost its lease (paused
// past the TTL while a peer took over) cannot commit: the commit script
// refuses its token, so it neither acknowledges nor forwards anything; the
// new owner's commit goes through. Real Redis.
func TestShardLeaseFencesAPausedOwner(t *testing.T) {
	rdb, prefix := storetest.Redis(t)
	ctx := context.Background()
	keys := streams.NewKeys(prefix, 2)
	leases := streams.NewShardLeases(rdb, keys)
	const ttl = 150 * time.Millisecond

	tokA, err := leases.Acquire(ctx, 0, "a", time.Minute)
	if err != nil || tokA <= 0 {
		t.Fatalf("a acquires: %d %v", tokA, err)
	}
	if tok, err := leases.Acquire(ctx, 0, "b", ttl); err != nil || tok != 0 {
		t.Fatalf("b acquired a held lease: %d %v", tok, err)
	}
	if ok, err := leases.Renew(ctx, 0, tokA, time.Minute); err != nil || !ok {
		t.Fatalf("a renews: %v %v", ok, err)
	}

	in, next, id, commit := pendingOnShard0(t, rdb, keys)

	// a's last renewal gives it ttl; it pauses past it, and b takes the
	// shard over with a higher token.
	if ok, err := leases.Renew(ctx, 0, tokA, ttl); err != nil || !ok {
		t.Fatalf("a renews: %v %v", ok, err)
	}
	waitExpired(t, rdb, keys.Owner(0))
	tokB, err := leases.Acquire(ctx, 0, "b", time.Minute) // b stays live through the checks
	if err != nil || tokB <= tokA {
		t.Fatalf("b acquires after expiry: %d (a had %d) %v", tokB, tokA, err)
	}
	// a wakes up and commits with its old token: refused, nothing applied.
	if err := commit(leases.Fence(0, tokA)); !errors.Is(err, streams.ErrFenced) {
		t.Fatalf("paused owner's commit: %v, want ErrFenced", err)
	}
	// The same through the context, as the pipeline passes it.
	fctx := streams.WithFence(ctx, leases.Fence(0, tokA))
	err = streams.Commit{Input: in, Group: streams.GroupSave, Ack: []string{id}}.Apply(fctx, rdb)
	if !errors.Is(err, streams.ErrFenced) {
		t.Fatalf("paused owner's commit via ctx: %v", err)
	}
	if n := rdb.XLen(ctx, next).Val(); n != 0 {
		t.Fatalf("fenced commit forwarded %d entries", n)
	}
	if p := rdb.XPending(ctx, in, streams.GroupSave).Val(); p.Count != 1 {
		t.Fatalf("fenced commit acknowledged: pending %d", p.Count)
	}
	if ok, _ := leases.Renew(ctx, 0, tokA, ttl); ok {
		t.Fatal("a renewed a lease it lost")
	}
	if err := leases.Release(ctx, 0, tokA); err != nil {
		t.Fatal(err)
	}
	if rdb.Exists(ctx, keys.Owner(0)).Val() != 1 {
		t.Fatal("a's stale release deleted b's lease")
	}
	// b commits.
	if err := commit(leases.Fence(0, tokB)); err != nil {
		t.Fatalf("owner's commit: %v", err)
	}
	if n := rdb.XLen(ctx, next).Val(); n != 1 {
		t.Fatalf("forwarded %d", n)
	}
	owners, err := leases.Owners(ctx)
	if err != nil || len(owners) != 2 || owners[0].Holder != "b" || owners[0].Token != tokB || owners[1].Holder != "" {
		t.Fatalf("owners %+v %v", owners, err)
	}
	// A graceful release frees the shard at once; a restart of b under the
	// same name gets a new token, fencing its earlier run.
	tokB2, _ := leases.Acquire(ctx, 0, "b", time.Minute)
	if tokB2 <= tokB {
		t.Fatalf("re-acquire by the same holder kept token %d", tokB2)
	}
	if err := leases.Release(ctx, 0, tokB2); err != nil {
		t.Fatal(err)
	}
	if tok, _ := leases.Acquire(ctx, 0, "a", ttl); tok <= tokB2 {
		t.Fatalf("after release: token %d", tok)
	}
}

// TestPruneRemovesOnlyConsumersWithNothingPending: a dead instance's
// consumer stays in the group while it has pending entries and is removed
// once they are reclaimed.
func TestPruneRemovesOnlyConsumersWithNothingPending(t *testing.T) {
	rdb, prefix := storetest.Redis(t)
	ctx := context.Background()
	stream := streams.NewKeys(prefix, 1).ToSave(0)
	if err := streams.EnsureGroup(ctx, rdb, stream, streams.GroupSave); err != nil {
		t.Fatal(err)
	}
	id := rdb.XAdd(ctx, &redis.XAddArgs{Stream: stream, Values: map[string]any{"seq": 1}}).Val()
	rdb.XReadGroup(ctx, &redis.XReadGroupArgs{Group: streams.GroupSave, Consumer: "dead", Streams: []string{stream, ">"}})
	rdb.XReadGroup(ctx, &redis.XReadGroupArgs{Group: streams.GroupSave, Consumer: "live", Streams: []string{stream, ">"}, Block: -1})
	dead := func(name string) bool { return name == "dead" }
	removed, err := streams.PruneConsumers(ctx, rdb, stream, streams.GroupSave, dead)
	if err != nil || len(removed) != 0 {
		t.Fatalf("pruned a consumer with pending entries: %v %v", removed, err)
	}
	rdb.XClaim(ctx, &redis.XClaimArgs{Stream: stream, Group: streams.GroupSave, Consumer: "live", Messages: []string{id}})
	removed, err = streams.PruneConsumers(ctx, rdb, stream, streams.GroupSave, dead)
	if err != nil || !slices.Equal(removed, []string{"dead"}) {
		t.Fatalf("pruned %v %v", removed, err)
	}
	cs := rdb.XInfoConsumers(ctx, stream, streams.GroupSave).Val()
	if len(cs) != 1 || cs[0].Name != "live" || cs[0].Pending != 1 {
		t.Fatalf("consumers left: %+v", cs)
	}
}

// TestShardLeaseFencesARepeatedToken: a Redis failover that loses the last
// INCR of a shard's epoch hands the next owner the very token the old one
// holds; the fence is the token qualified by the holding process's run, so
// the old owner is still refused (commit, renew and release alike).
func TestShardLeaseFencesARepeatedToken(t *testing.T) {
	rdb, prefix := storetest.Redis(t)
	ctx := context.Background()
	keys := streams.NewKeys(prefix, 2)
	procA, procB := streams.NewShardLeases(rdb, keys), streams.NewShardLeases(rdb, keys)

	tokA, err := procA.Acquire(ctx, 0, "a", time.Minute)
	if err != nil || tokA <= 0 {
		t.Fatalf("a acquires: %d %v", tokA, err)
	}
	// The failover: the new master never saw a's lease nor its INCR.
	if err := rdb.Del(ctx, keys.Owner(0)).Err(); err != nil {
		t.Fatal(err)
	}
	if err := rdb.Set(ctx, keys.Epoch(0), tokA-1, 0).Err(); err != nil {
		t.Fatal(err)
	}
	tokB, err := procB.Acquire(ctx, 0, "b", time.Minute)
	if err != nil || tokB != tokA {
		t.Fatalf("b acquires: token %d, want the repeated %d (%v)", tokB, tokA, err)
	}

	_, _, _, commit := pendingOnShard0(t, rdb, keys)
	if err := commit(procA.Fence(0, tokA)); !errors.Is(err, streams.ErrFenced) {
		t.Fatalf("old owner's commit with the repeated token: %v, want ErrFenced", err)
	}
	if ok, err := procA.Renew(ctx, 0, tokA, time.Minute); err != nil || ok {
		t.Fatalf("old owner renewed b's lease: %v %v", ok, err)
	}
	if err := procA.Release(ctx, 0, tokA); err != nil {
		t.Fatal(err)
	}
	if rdb.Exists(ctx, keys.Owner(0)).Val() != 1 {
		t.Fatal("old owner's release deleted b's lease")
	}
	if err := commit(procB.Fence(0, tokB)); err != nil {
		t.Fatalf("new owner's commit: %v", err)
	}
}
