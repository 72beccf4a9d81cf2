package store

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Membership is this process's side of the cluster membership: it
// registers, heartbeats every interval, keeps a cached view of the live
// instances (refreshed with every heartbeat) and tells subscribers when the
// set of live instances changes. Build it with NewMembership, call Start
// before serving, Run until shutdown, Leave on the way out.
//
// Presence entries and routing use the incarnation "id#epoch" rather than
// the bare id, so entries written by an earlier run of the same id stop
// counting the moment it restarts.
type Membership struct {
	inst     *Instances
	interval time.Duration
	conns    func() int
	log      *slog.Logger

	mu       sync.RWMutex
	self     Instance
	live     map[string]Instance // by id
	list     []Instance
	gone     map[string]goneInstance // by id: left the live set within recentTTL
	onChange []func(live []Instance)
	lastLoad time.Time

	refreshMu sync.Mutex // one Live() read at a time
}

// goneInstance is an instance that left the live set, and when.
type goneInstance struct {
	Instance
	at time.Time
}

// recentTTL is how long Recent keeps an instance that left the live set.
const recentTTL = time.Minute

// missRefresh bounds how often a lookup of an unknown incarnation re-reads
// the live set (an instance that just joined is found within this).
const missRefresh = 100 * time.Millisecond

// NewMembership returns the membership of this process as self (ID, Boot
// and Addr set) over inst; interval is cluster.heartbeat_interval (well
// below inst.TTL()); conns reports the connection count for the heartbeat
// (nil reports 0).
func NewMembership(inst *Instances, self Instance, interval time.Duration, conns func() int, log *slog.Logger) *Membership {
	if conns == nil {
		conns = func() int { return 0 }
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Membership{inst: inst, self: self, interval: interval, conns: conns, log: log, live: map[string]Instance{},
		gone: map[string]goneInstance{}}
}

// Start registers this instance, waiting up to one TTL plus one interval
// for a stale record of the same id (a crash of this process) to lapse,
// and loads the live set. ErrInstanceTaken: another live process has the id.
func (m *Membership) Start(ctx context.Context) error {
	self, err := m.inst.Register(ctx, m.Self(), m.inst.TTL()+m.interval)
	if err != nil {
		return err
	}
	m.mu.Lock()
	m.self = self
	m.mu.Unlock()
	return m.Refresh(ctx)
}

// Self is this instance as registered (Epoch set after Start).
func (m *Membership) Self() Instance {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return m.self
}

// Incarnation is this run's presence member and routing name, "id#epoch".
func (m *Membership) Incarnation() string {
	s := m.Self()
	return Incarnation(s.ID, s.Epoch)
}

// OnChange registers fn to run (on the heartbeat goroutine) with the new
// live set, sorted by id, whenever an instance joins, leaves or restarts.
// Register before Run. fn must not block for long.
func (m *Membership) OnChange(fn func(live []Instance)) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.onChange = append(m.onChange, fn)
}

// Live returns the cached live instances, sorted by id (at most one
// heartbeat interval old). The slice is shared: do not modify it.
func (m *Membership) Live() []Instance {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return m.list
}

// Recent returns the instances that left the live set within the last
// minute and have not come back, sorted by id: a process whose heartbeat
// lapsed in a stall is among them until it registers again. Session events
// go to them too (docs/cluster.md), since a kick that misses a live
// session is never repeated; pushes do not.
func (m *Membership) Recent() []Instance {
	m.mu.RLock()
	defer m.mu.RUnlock()
	out := make([]Instance, 0, len(m.gone))
	for _, g := range m.gone {
		if time.Since(g.at) <= recentTTL {
			out = append(out, g.Instance)
		}
	}
	slices.SortFunc(out, func(a, b Instance) int { return strings.Compare(a.ID, b.ID) })
	return out
}

// IsLive reports whether incarnation ("id#epoch") is a live instance's
// current run. An incarnation the cache does not know makes it re-read the
// live set (at most every 100 ms), so an instance that just joined counts
// at once; a Redis error answers from the cache.
func (m *Membership) IsLive(ctx context.Context, incarnation string) bool {
	id, epoch, ok := ParseIncarnation(incarnation)
	if !ok {
		return false
	}
	m.mu.RLock()
	in, found := m.live[id]
	stale := time.Since(m.lastLoad) >= missRefresh
	m.mu.RUnlock()
	if found && in.Epoch == epoch {
		return true
	}
	if found && in.Epoch > epoch || !stale {
		return false // an earlier run of a live id, or looked up just now
	}
	if err := m.Refresh(ctx); err != nil {
		m.log.Warn("cluster: reading live instances failed", "err", err)
		return false
	}
	m.mu.RLock()
	defer m.mu.RUnlock()
	in, found = m.live[id]
	return found && in.Epoch == epoch
}

// Refresh re-reads the live set from Redis and runs the OnChange hooks if
// it changed.
func (m *Membership) Refresh(ctx context.Context) error {
	m.refreshMu.Lock()
	defer m.refreshMu.Unlock()
	list, err := m.inst.Live(ctx)
	if err != nil {
		return err
	}
	live := make(map[string]Instance, len(list))
	for _, in := range list {
		live[in.ID] = in
	}
	now := time.Now()
	m.mu.Lock()
	changed := len(live) != len(m.live)
	for id, in := range live {
		if old, ok := m.live[id]; !ok || old.Epoch != in.Epoch {
			changed = true
		}
		delete(m.gone, id)
	}
	for id, old := range m.live {
		if _, ok := live[id]; !ok {
			m.gone[id] = goneInstance{Instance: old, at: now}
		}
	}
	for id, g := range m.gone {
		if now.Sub(g.at) > recentTTL {
			delete(m.gone, id)
		}
	}
	m.live, m.list, m.lastLoad = live, list, now
	hooks := m.onChange
	m.mu.Unlock()
	if changed {
		for _, fn := range hooks {
			fn(list)
		}
	}
	return nil
}

// Run heartbeats every interval until ctx is done. When the record was
// lost (this process stalled past the TTL and was presumed dead) it
// registers again, keeping its epoch (its connections and presence entries
// are still valid); it fails only if another live process took the id
// meanwhile.
func (m *Membership) Run(ctx context.Context) error {
	t := time.NewTicker(m.interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
		hctx, cancel := context.WithTimeout(ctx, m.inst.TTL())
		err := m.inst.Heartbeat(hctx, m.Self(), m.conns())
		if errors.Is(err, ErrInstanceLost) {
			m.log.Error("cluster: this instance was presumed dead (heartbeat lapsed); registering again", "instance_id", m.Self().ID)
			var self Instance
			self, err = m.inst.Register(hctx, m.Self(), 0)
			if errors.Is(err, ErrInstanceTaken) {
				cancel()
				return fmt.Errorf("cluster membership: %w", err)
			}
			if err == nil {
				m.mu.Lock()
				m.self = self
				m.mu.Unlock()
			}
		}
		if err != nil {
			m.log.Warn("cluster: heartbeat failed", "err", err)
		}
		if err := m.Refresh(hctx); err != nil && ctx.Err() == nil {
			m.log.Warn("cluster: reading live instances failed", "err", err)
		}
		cancel()
	}
}

// Leave removes this instance's record at once (graceful shutdown).
func (m *Membership) Leave(ctx context.Context) error { return m.inst.Leave(ctx, m.Self()) }

// Incarnation formats an instance run as "id#epoch" (presence members,
// inbox envelopes).
func Incarnation(id string, epoch int64) string { return id + "#" + strconv.FormatInt(epoch, 10) }

// ParseIncarnation splits "id#epoch"; ok is false for anything else.
func ParseIncarnation(s string) (id string, epoch int64, ok bool) {
	i := strings.LastIndexByte(s, '#')
	if i <= 0 {
		return "", 0, false
	}
	epoch, err := strconv.ParseInt(s[i+1:], 10, 64)
	if err != nil {
		return "", 0, false
	}
	return s[:i], epoch, true
}
