package store_test

import (
	"context"
	"fmt"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/nexo-im/nexo/domain"
	"github.com/redis/go-redis/v9"

	"github.com/nexo-im/nexo/store"
	"github.com/nexo-im/nexo/store/storetest"
)

func sampleState() *store.GroupState {
	return &store.GroupState{
		Group: domain.Group{ID: "g1", Name: "名字 with\nnewline \"quotes\"", Introduction: "i", Avatar: "a", Status: domain.GroupDismissed,
			CreatorUserID: "alice", OwnerUserID: "bob", GroupType: 2, JoinPolicy: "invite_only", Muted: true, CreatedAt: 1, UpdatedAt: 2},
		Members: map[string]store.MemberState{
			"alice": {Role: domain.RoleMember, Status: domain.MemberBanned, JoinSeq: 1, CapSeq: 40, MuteUntil: 1_795_000_000_000},
			"bob":   {Role: domain.RoleOwner, Status: domain.MemberNormal, JoinSeq: 1, RecvMsgOpt: 2},
			"c-_9":  {Role: domain.RoleAdmin, Status: domain.MemberLeft, JoinSeq: 99, CapSeq: 120, RecvMsgOpt: 1},
		},
	}
}

func TestGroupStateEncodingRoundTrips(t *testing.T) {
	for _, st := range []*store.GroupState{sampleState(), {Group: domain.Group{ID: "empty"}, Members: map[string]store.MemberState{}}} {
		got, err := store.DecodeGroupState(store.EncodeGroupState(st))
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, st) {
			t.Fatalf("round trip:\n got %+v\nwant %+v", got, st)
		}
	}
	// A line written before mute_until decodes with none.
	old, err := store.DecodeGroupState(`{"id":"g"}` + "\nalice 20 0 3 0 1")
	if err != nil || old.Members["alice"] != (store.MemberState{Role: domain.RoleMember, JoinSeq: 3, RecvMsgOpt: 1}) {
		t.Fatalf("a line without mute_until: %+v %v", old, err)
	}
	for _, bad := range []string{"not json", `{"id":"g"}` + "\nalice 1 2", `{"id":"g"}` + "\nalice 1 2 x 4 5"} {
		if _, err := store.DecodeGroupState(bad); err == nil {
			t.Errorf("decoded %q", bad)
		}
	}
}

// TestGroupCacheVersionedFill shows the cache never keeps a state loaded
// before an invalidation: a fill against an old version is refused.
func TestGroupCacheVersionedFill(t *testing.T) {
	for name, open := range storetest.RedisTopologies() {
		t.Run(name, func(t *testing.T) {
			rdb, keys := open(t)
			testGroupCacheVersionedFill(t, rdb, keys.Prefix, store.NewGroupCache(rdb, keys, time.Minute))
		})
	}
}

func testGroupCacheVersionedFill(t *testing.T, rdb redis.UniversalClient, prefix string, c *store.GroupCache) {
	ctx := context.Background()

	if v, err := c.Version(ctx, "g1"); err != nil || v != "" {
		t.Fatalf("version of an empty cache: %q %v", v, err)
	}
	v1, st, err := c.Read(ctx, "g1")
	if err != nil || st != nil || v1 == "" {
		t.Fatalf("first read: %q %v %v", v1, st, err)
	}
	if again, _, _ := c.Read(ctx, "g1"); again != v1 {
		t.Fatalf("a second read changed the version: %q then %q", v1, again)
	}
	// A reader loaded the database (v1), then a change committed and invalidated.
	if err := c.Invalidate(ctx, "g1"); err != nil {
		t.Fatal(err)
	}
	if ok, err := c.Fill(ctx, "g1", v1, sampleState()); err != nil || ok {
		t.Fatalf("stale fill accepted: %v %v", ok, err)
	}
	v2, st, _ := c.Read(ctx, "g1")
	if st != nil || v2 == v1 {
		t.Fatalf("after invalidate: version %q (was %q), state %v", v2, v1, st)
	}
	if ok, err := c.Fill(ctx, "g1", v2, sampleState()); err != nil || !ok {
		t.Fatalf("fresh fill refused: %v %v", ok, err)
	}
	v3, st, err := c.Read(ctx, "g1")
	if err != nil || v3 != v2 || !reflect.DeepEqual(st, sampleState()) {
		t.Fatalf("read after fill: %q %+v %v", v3, st, err)
	}
	if v, _ := c.Version(ctx, "g1"); v != v2 {
		t.Fatalf("Version = %q, want %q", v, v2)
	}
	// The key expires as a whole; an old token never matches again.
	if ttl := rdb.PTTL(ctx, prefix+":group:members:g1").Val(); ttl <= 0 || ttl > time.Minute {
		t.Fatalf("ttl %v", ttl)
	}
	rdb.Del(ctx, prefix+":group:members:g1")
	if ok, _ := c.Fill(ctx, "g1", v2, sampleState()); ok {
		t.Fatal("fill against an expired key's version accepted")
	}
}

func TestGroupLockIsExclusiveAndOwned(t *testing.T) {
	for name, open := range storetest.RedisTopologies() {
		t.Run(name, func(t *testing.T) {
			rdb, keys := open(t)
			testGroupLockIsExclusiveAndOwned(t, store.NewGroupCache(rdb, keys, time.Minute))
		})
	}
}

func testGroupLockIsExclusiveAndOwned(t *testing.T, c *store.GroupCache) {
	ctx := context.Background()
	tok, ok, err := c.TryLock(ctx, "g1", time.Minute)
	if err != nil || !ok {
		t.Fatal(ok, err)
	}
	if _, ok, _ := c.TryLock(ctx, "g1", time.Minute); ok {
		t.Fatal("lock taken twice")
	}
	if _, ok, _ := c.TryLock(ctx, "g2", time.Minute); !ok {
		t.Fatal("another group's lock is not independent")
	}
	if err := c.Unlock(ctx, "g1", "not-the-token"); err != nil {
		t.Fatal(err)
	}
	if _, ok, _ := c.TryLock(ctx, "g1", time.Minute); ok {
		t.Fatal("a foreign token released the lock")
	}
	if err := c.Unlock(ctx, "g1", tok); err != nil {
		t.Fatal(err)
	}
	if _, ok, _ := c.TryLock(ctx, "g1", time.Minute); !ok {
		t.Fatal("lock not released")
	}
}

func BenchmarkDecodeGroupState(b *testing.B) {
	for _, n := range []int{500, 10000} {
		st := &store.GroupState{Group: domain.Group{ID: "g"}, Members: map[string]store.MemberState{}}
		for i := 0; i < n; i++ {
			st.Members[fmt.Sprintf("user-%06d", i)] = store.MemberState{Role: domain.RoleMember, JoinSeq: int64(i + 1)}
		}
		enc := store.EncodeGroupState(st)
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			b.SetBytes(int64(len(enc)))
			for b.Loop() {
				if _, err := store.DecodeGroupState(enc); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// Concurrent version reads share round trips, one HGET per distinct group
// in each, and every caller gets its own group's version; a group with no
// cache answers "".
func TestGroupCacheVersionsShareRoundTrips(t *testing.T) {
	for name, open := range storetest.RedisTopologies() {
		t.Run(name, func(t *testing.T) {
			rdb, keys := open(t)
			ctx := context.Background()
			c := store.NewGroupCache(rdb, keys, time.Minute)
			want := map[string]string{"none": ""}
			for i := range 10 {
				g := fmt.Sprint("g", i)
				v, _, err := c.Read(ctx, g)
				if err != nil {
					t.Fatal(err)
				}
				want[g] = v
			}
			counter := &hgetCounter{}
			rdb.AddHook(counter)
			const callers, each = 64, 20
			var wg sync.WaitGroup
			errs := make(chan error, callers)
			for i := range callers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for j := range each {
						g := fmt.Sprint("g", (i+j)%10)
						if (i+j)%11 == 0 {
							g = "none"
						}
						if v, err := c.Version(ctx, g); err != nil || v != want[g] {
							errs <- fmt.Errorf("Version(%s) = %q, %v; want %q", g, v, err, want[g])
							return
						}
					}
				}()
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				t.Fatal(err)
			}
			trips, hgets := counter.counts()
			if hgets >= callers*each || trips >= hgets {
				t.Fatalf("%d version reads took %d HGETs in %d round trips: no batching", callers*each, hgets, trips)
			}
		})
	}
}

// hgetCounter counts HGETs and the round trips (commands or pipelines,
// per node) that carried them.
type hgetCounter struct {
	mu           sync.Mutex
	trips, hgets int
}

func (h *hgetCounter) counts() (int, int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.trips, h.hgets
}

func (h *hgetCounter) add(cmds []redis.Cmder) {
	n := 0
	for _, c := range cmds {
		if c.Name() == "hget" {
			n++
		}
	}
	if n == 0 {
		return
	}
	h.mu.Lock()
	h.trips++
	h.hgets += n
	h.mu.Unlock()
}

func (h *hgetCounter) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h *hgetCounter) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		h.add([]redis.Cmder{cmd})
		return next(ctx, cmd)
	}
}

func (h *hgetCounter) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		h.add(cmds)
		return next(ctx, cmds)
	}
}
