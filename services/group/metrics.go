package group

import "github.com/prometheus/client_golang/prometheus"

// cacheMetrics count member lookups by where they were answered, so the
// hit rate is (local + redis) / all.
type cacheMetrics struct {
	lookups       *prometheus.CounterVec
	invalidations prometheus.Counter
	patches       prometheus.Counter
}

func newCacheMetrics(reg prometheus.Registerer) *cacheMetrics {
	m := &cacheMetrics{
		lookups: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "nexo", Name: "group_member_cache_lookups_total",
			Help: "Group member lookups by where they were answered: local (this process, version checked), redis, db (cache miss, filled), db_uncached (Redis unreachable).",
		}, []string{"result"}),
		invalidations: prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: "nexo", Name: "group_member_cache_invalidations_total",
			Help: "Group member cache invalidations (one per membership change).",
		}),
		patches: prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: "nexo", Name: "group_member_cache_patches_total",
			Help: "Member-level setting changes (recv_msg_opt) applied to the cached member list in place, without a reload.",
		}),
	}
	for _, r := range []string{"local", "redis", "db", "db_uncached"} {
		m.lookups.WithLabelValues(r)
	}
	if reg != nil {
		reg.MustRegister(m.lookups, m.invalidations, m.patches)
	}
	return m
}

// fanoutMetrics describe group fanouts.
type fanoutMetrics struct {
	modes   *prometheus.CounterVec
	latency prometheus.Histogram
	frames  prometheus.Counter
}

func newFanoutMetrics(reg prometheus.Registerer) *fanoutMetrics {
	m := &fanoutMetrics{
		modes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "nexo", Name: "group_push_mode_total",
			Help: "Group messages fanned out, by the push strategy chosen (push, notify, none).",
		}, []string{"mode"}),
		latency: prometheus.NewHistogram(prometheus.HistogramOpts{
			Namespace: "nexo", Name: "group_fanout_seconds",
			Help:    "Time from the start of a group fanout to the last online member's frame being queued.",
			Buckets: prometheus.ExponentialBuckets(0.00005, 2, 16),
		}),
		frames: prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: "nexo", Name: "group_pushed_frames_total",
			Help: "Frames of group fanouts queued to connections.",
		}),
	}
	for _, mode := range []string{modePush, modeNotify, modeNone} {
		m.modes.WithLabelValues(mode)
	}
	if reg != nil {
		reg.MustRegister(m.modes, m.latency, m.frames)
	}
	return m
}

// serviceMetrics count management outcomes.
type serviceMetrics struct {
	notifications *prometheus.CounterVec
	undone        prometheus.Counter
}

func newServiceMetrics(reg prometheus.Registerer) *serviceMetrics {
	m := &serviceMetrics{
		notifications: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "nexo", Name: "group_notifications_total",
			Help: "Group notifications sent, by type.",
		}, []string{"type"}),
		undone: prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: "nexo", Name: "group_changes_undone_total",
			Help: "Group changes rolled back because their notification could not be sent.",
		}),
	}
	if reg != nil {
		reg.MustRegister(m.notifications, m.undone)
	}
	return m
}
