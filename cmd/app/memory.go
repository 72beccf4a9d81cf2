package app

import (
	"context"
	"log/slog"
	"runtime/debug"
	"runtime/metrics"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/nexo-im/nexo/configs"
)

// idleReleaser hands the heap a load left behind back to the system once
// the process is idle (memory.idle_release). After a load stops Go keeps
// its heap sized for the load until the next collection — which a process
// that hardly allocates may not run for two minutes — and its background
// scavenger returns only what lies above that size, so RSS stays near the
// load's peak. One forced collection and release when idle brings RSS back
// near the live heap; it never runs under load, where it would cost a
// collection per check for nothing.
type idleReleaser struct {
	every    time.Duration
	minBytes uint64
	log      *slog.Logger
	samples  []metrics.Sample
	// trims run at each idle check: components dropping what a past load
	// left them holding (streams.Accepter.ReleaseIdle), each returning
	// about how many bytes it let go, which counts toward a release.
	trims    []func(context.Context) int64
	released prometheus.Counter
}

const (
	metricAllocs      = "/gc/heap/allocs:bytes"
	metricHeapFree    = "/memory/classes/heap/free:bytes"
	metricHeapUnused  = "/memory/classes/heap/unused:bytes"
	metricHeapObjects = "/memory/classes/heap/objects:bytes"
	metricHeapLive    = "/gc/heap/live:bytes"
)

// newIdleReleaser returns the releaser of cfg (nil when it is off); reg may
// be nil.
func newIdleReleaser(cfg configs.Memory, reg prometheus.Registerer, log *slog.Logger) *idleReleaser {
	if cfg.IdleRelease <= 0 {
		return nil
	}
	r := &idleReleaser{every: cfg.IdleRelease, minBytes: uint64(cfg.IdleAllocBytes), log: log,
		samples: []metrics.Sample{{Name: metricAllocs}, {Name: metricHeapFree}, {Name: metricHeapUnused}, {Name: metricHeapObjects}, {Name: metricHeapLive}},
		released: prometheus.NewCounter(prometheus.CounterOpts{Name: "nexo_memory_idle_releases_total",
			Help: "Times an idle process collected and returned its free heap to the system (memory.idle_release)."})}
	if reg != nil {
		reg.MustRegister(r.released)
	}
	return r
}

// run checks every r.every until ctx is done.
func (r *idleReleaser) run(ctx context.Context) error {
	t := time.NewTicker(r.every)
	defer t.Stop()
	prev := r.read()[0]
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
		v := r.read()
		// Retained but not live: free and unused heap, and the objects
		// allocated since the last collection (after a load stops, most of
		// the heap is garbage no collection has yet run to find).
		allocs, retained := v[0], v[1]+v[2]+v[3]-min(v[3], v[4])
		if allocs-prev < r.minBytes {
			for _, trim := range r.trims {
				retained += uint64(max(trim(ctx), 0))
			}
		}
		if r.idle(allocs-prev, retained) {
			before := v[1] + v[2] + v[3]
			debug.FreeOSMemory()
			r.released.Inc()
			after := r.read()
			r.log.Debug("idle: returned the free heap to the system",
				"heap_bytes_before", before, "heap_bytes_after", after[1]+after[2]+after[3])
			allocs = after[0]
		}
		prev = allocs
	}
}

// idle reports whether a release is due: fewer than minBytes allocated
// since the last check, and more than minBytes of the heap retained but
// unused (free spans not yet returned, or objects beyond the live heap of
// the last collection).
func (r *idleReleaser) idle(allocated, retained uint64) bool {
	return allocated < r.minBytes && retained > r.minBytes
}

func (r *idleReleaser) read() [5]uint64 {
	metrics.Read(r.samples)
	var v [5]uint64
	for i, s := range r.samples {
		if s.Value.Kind() == metrics.KindUint64 {
			v[i] = s.Value.Uint64()
		}
	}
	return v
}

// buildMemory starts the idle release (memory.idle_release; none when 0).
func (a *App) buildMemory(context.Context) error {
	if r := newIdleReleaser(a.cfg.Memory, a.metrics, a.log); r != nil {
		r.trims = a.idleTrims
		a.add(component{name: "memory upkeep", run: r.run})
	}
	return nil
}
