package workers

import (
	"context"
	"hash/fnv"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/nexo-im/nexo/streams"
)

// ShardLeaser takes, keeps and gives back shard leases (streams.ShardLeases).
type ShardLeaser interface {
	AcquireMany(ctx context.Context, shards []int, holder string, ttl time.Duration) (map[int]int64, error)
	RenewMany(ctx context.Context, tokens map[int]int64, ttl time.Duration) (map[int]bool, error)
	Release(ctx context.Context, shard int, token int64) error
	Fence(shard int, token int64) *streams.Fence
}

// Ownership makes the pipeline run each shard on exactly one live
// instance: it holds a lease per shard it runs (renewed every Interval,
// lasting TTL), and the stage commits are fenced with the lease's token.
// Which instance should own a shard is Assign over the live instance IDs
// (rendezvous hashing with bounded load); a shard changes hands only when
// the old lease was released (graceful) or expired (crash, pause,
// partition). Leases, not the membership view, decide who may commit:
// instances that briefly disagree about who is live only delay a move.
type Ownership struct {
	// Self is this instance's ID (cluster.instance_id) as Live lists it; it
	// holds the leases. Empty: the pipeline's consumer name.
	Self   string
	Leases ShardLeaser
	// Live returns the IDs of the live instances (store.Membership, a
	// cached view at most one heartbeat old). This instance counts as live
	// whatever it says.
	Live func() []string
	// TTL is how long a lease lasts without renewal (cluster.instance_ttl);
	// Interval how often leases are renewed and ownership recomputed
	// (cluster.heartbeat_interval). A shard of a crashed instance moves
	// within TTL + Interval.
	TTL, Interval time.Duration
}

// OwnedShard is a shard this instance runs (GET /admin/cluster).
type OwnedShard struct {
	Shard int   `json:"shard"`
	Token int64 `json:"token"`
	Since int64 `json:"since"` // Unix ms
}

// Assign maps each of shards to one of live (instance IDs): rendezvous
// hashing with bounded load — shard by shard, the instance with the highest
// hash of "id#shard" that holds fewer than ceil(shards/len(live)) — so the
// shards spread evenly and a join or leave moves few of them. Every instance
// computes the same map from the same live set.
func Assign(live []string, shards int) []string {
	out := make([]string, shards)
	if len(live) == 0 {
		return out
	}
	live = slices.Sorted(slices.Values(live))
	limit := (shards + len(live) - 1) / len(live)
	load := make(map[string]int, len(live))
	for shard := range out {
		best, bestScore := "", uint64(0)
		for _, id := range live {
			if load[id] >= limit {
				continue
			}
			if s := score(id, shard); best == "" || s > bestScore {
				best, bestScore = id, s
			}
		}
		out[shard] = best
		load[best]++
	}
	return out
}

// DesiredOwner is Assign's choice for one shard.
func DesiredOwner(live []string, shards, shard int) string { return Assign(live, shards)[shard] }

// score hashes (id, shard): FNV-1a, then a 64-bit finalizer (MurmurHash3's
// fmix64), since FNV alone barely mixes short, similar IDs.
func score(id string, shard int) uint64 {
	h := fnv.New64a()
	_, _ = h.Write([]byte(id + "#" + strconv.Itoa(shard)))
	x := h.Sum64()
	x ^= x >> 33
	x *= 0xff51afd7ed558ccd
	x ^= x >> 33
	x *= 0xc4ceb9fe1a85ec53
	x ^= x >> 33
	return x
}

// shardRun is one shard's consumers under a lease.
type shardRun struct {
	token     int64
	since     time.Time
	renewedAt time.Time
	cancel    context.CancelFunc
	done      chan struct{} // both consumers returned
	releasing bool          // set under owner.mu by the rebalance goroutine only
	released  chan struct{} // closed once a graceful release finished
}

// owner is the pipeline's lease bookkeeping.
type owner struct {
	mu      sync.Mutex
	running map[int]*shardRun
	poke    chan struct{}
	stop    chan struct{} // closed by Release
	stopped chan struct{} // closed when every lease is given back
	once    sync.Once
}

func newOwner() *owner {
	return &owner{running: map[int]*shardRun{}, poke: make(chan struct{}, 1), stop: make(chan struct{}), stopped: make(chan struct{})}
}

// Rebalance asks the pipeline to recompute ownership now (membership
// changed); it never blocks.
func (p *Pipeline) Rebalance() {
	if p.own == nil {
		return
	}
	select {
	case p.owner.poke <- struct{}{}:
	default:
	}
}

// Owned lists the shards this instance runs now, ascending.
func (p *Pipeline) Owned() []OwnedShard {
	if p.own == nil {
		out := make([]OwnedShard, p.keys.Shards())
		for i := range out {
			out[i] = OwnedShard{Shard: i}
		}
		return out
	}
	p.owner.mu.Lock()
	defer p.owner.mu.Unlock()
	out := make([]OwnedShard, 0, len(p.owner.running))
	for shard, r := range p.owner.running {
		select {
		case <-r.done:
			continue // stopped: fenced, failed or handed over
		default:
		}
		if !r.releasing {
			out = append(out, OwnedShard{Shard: shard, Token: r.token, Since: r.since.UnixMilli()})
		}
	}
	slices.SortFunc(out, func(a, b OwnedShard) int { return a.Shard - b.Shard })
	return out
}

// Release stops taking shards, finishes the batches in hand, gives every
// lease back at once (peers take the shards over without waiting for the
// TTL) and returns when done or when ctx ends. Called on SIGTERM before
// the connections close; Run's own shutdown does the same.
func (p *Pipeline) Release(ctx context.Context) error {
	if p.own == nil {
		return nil
	}
	p.owner.once.Do(func() { close(p.owner.stop) })
	select {
	case <-p.owner.stopped:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// runOwned is Run with Ownership: rebalance every Interval and on Rebalance,
// until ctx ends or Release is called; then drain and release everything.
func (p *Pipeline) runOwned(ctx context.Context) error {
	trimCtx, stopTrim := context.WithCancel(ctx)
	trimmed := make(chan struct{})
	go func() { p.trimDead(trimCtx); close(trimmed) }()
	defer func() { stopTrim(); <-trimmed }()
	tick := time.NewTicker(p.own.Interval)
	defer tick.Stop()
	for first := true; ; first = false {
		p.rebalance(ctx)
		if first {
			close(p.started) // the shards free for this instance are running
		}
		select {
		case <-ctx.Done():
			p.releaseAll()
			return nil
		case <-p.owner.stop:
			p.releaseAll()
			return nil
		case <-tick.C:
		case <-p.owner.poke:
		}
	}
}

func (p *Pipeline) live() []string {
	live := p.own.Live()
	if !slices.Contains(live, p.own.Self) {
		live = append(slices.Clone(live), p.own.Self)
	}
	return live
}

// rebalance renews held leases, hands back shards that should move, and
// takes the shards that should be ours once they are free: one round trip
// for the renewals and one for the acquisitions.
func (p *Pipeline) rebalance(ctx context.Context) {
	assigned := Assign(p.live(), p.keys.Shards())
	held := map[int]*shardRun{}
	var free []int
	for shard := 0; shard < p.keys.Shards(); shard++ {
		p.owner.mu.Lock()
		r := p.owner.running[shard]
		p.owner.mu.Unlock()
		switch {
		case r != nil && !p.finished(shard, r):
			held[shard] = r
		case assigned[shard] == p.own.Self:
			free = append(free, shard)
		}
	}
	if len(held) > 0 {
		tokens := make(map[int]int64, len(held))
		for shard, r := range held {
			tokens[shard] = r.token
		}
		ok, err := p.own.Leases.RenewMany(ctx, tokens, p.own.TTL)
		for shard, r := range held {
			p.renewed(shard, r, ok[shard], err, assigned[shard] == p.own.Self)
		}
	}
	if len(free) == 0 || ctx.Err() != nil {
		return
	}
	tokens, err := p.own.Leases.AcquireMany(ctx, free, p.own.Self, p.own.TTL)
	if err != nil {
		p.log.Warn("shard leases: acquire failed", "shards", free, "err", err)
		return
	}
	for _, shard := range free {
		if t := tokens[shard]; t > 0 {
			p.startShard(shard, t)
		}
	}
}

// finished drops a shard whose consumers have returned (fenced, failed, or
// released) and reports whether it did.
func (p *Pipeline) finished(shard int, r *shardRun) bool {
	select {
	case <-r.done:
	default:
		return false
	}
	if r.releasing {
		<-r.released
	} else {
		// Fenced or failed: give the lease back if it is still ours, so
		// the shard restarts cleanly (here or elsewhere).
		ctx, cancel := context.WithTimeout(context.Background(), p.own.Interval)
		_ = p.own.Leases.Release(ctx, shard, r.token)
		cancel()
	}
	p.owner.mu.Lock()
	delete(p.owner.running, shard)
	p.owner.mu.Unlock()
	return true
}

// renewed acts on one shard's renewal: stop it when the lease is lost (or
// cannot be renewed for a TTL), hand it over when it should move.
func (p *Pipeline) renewed(shard int, r *shardRun, ok bool, err error, want bool) {
	switch {
	case err != nil:
		// Redis unreachable: our commits cannot land either. Stop once
		// the lease may have expired, so we never overlap a new owner.
		if time.Since(r.renewedAt) >= p.own.TTL {
			p.log.Warn("shard lease: cannot renew, stopping the shard", "shard", shard, "err", err)
			r.cancel()
		}
	case !ok:
		p.log.Warn("shard lease lost: stopping the shard", "shard", shard, "token", r.token)
		r.cancel()
	default:
		r.renewedAt = time.Now()
		if !want && !r.releasing {
			// Another live instance should run it: drain, then release
			// so it can take over at once.
			p.owner.mu.Lock()
			r.releasing = true
			p.owner.mu.Unlock()
			p.log.Info("handing shard over", "shard", shard)
			go func() {
				r.cancel()
				<-r.done
				ctx, cancel := context.WithTimeout(context.Background(), p.own.TTL)
				if err := p.own.Leases.Release(ctx, shard, r.token); err != nil {
					p.log.Warn("shard lease: release failed (it expires instead)", "shard", shard, "err", err)
				}
				cancel()
				close(r.released)
			}()
		}
	}
}

// startShard runs shard's save and deliver consumers fenced with token.
func (p *Pipeline) startShard(shard int, token int64) {
	now := time.Now()
	ctx, cancel := context.WithCancel(context.Background())
	r := &shardRun{token: token, since: now, renewedAt: now, cancel: cancel, done: make(chan struct{}), released: make(chan struct{})}
	p.owner.mu.Lock()
	p.owner.running[shard] = r
	p.owner.mu.Unlock()
	p.log.Info("shard acquired", "shard", shard, "token", token)
	fenced := streams.WithFence(ctx, p.own.Leases.Fence(shard, token))
	go func() {
		defer close(r.done)
		defer cancel()
		_ = p.runShard(fenced, shard, true)
	}()
}

// releaseAll stops every shard (finishing the batches in hand) and gives
// every lease back.
func (p *Pipeline) releaseAll() {
	p.owner.mu.Lock()
	runs := make(map[int]*shardRun, len(p.owner.running))
	for s, r := range p.owner.running {
		runs[s] = r
	}
	p.owner.mu.Unlock()
	for _, r := range runs {
		r.cancel()
	}
	for shard, r := range runs {
		<-r.done
		if r.releasing {
			<-r.released
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), p.own.TTL)
		if err := p.own.Leases.Release(ctx, shard, r.token); err != nil {
			p.log.Warn("shard lease: release failed (it expires instead)", "shard", shard, "err", err)
		}
		cancel()
	}
	p.owner.mu.Lock()
	clear(p.owner.running)
	p.owner.mu.Unlock()
}
