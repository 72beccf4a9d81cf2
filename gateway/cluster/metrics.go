package cluster

import "github.com/prometheus/client_golang/prometheus"

type metrics struct {
	sent     *prometheus.CounterVec
	received *prometheus.CounterVec
	errors   *prometheus.CounterVec
	stale    prometheus.Counter
	noConn   prometheus.Counter
	batch    prometheus.Histogram
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		sent: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: "nexo", Subsystem: "cluster", Name: "envelopes_sent_total",
			Help: "Envelopes published to other instances' inboxes, by kind (push, revoke, kick, disconnect, join)."}, []string{"kind"}),
		received: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: "nexo", Subsystem: "cluster", Name: "envelopes_received_total",
			Help: "Envelopes read from this instance's inbox, by kind."}, []string{"kind"}),
		errors: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: "nexo", Subsystem: "cluster", Name: "errors_total",
			Help: "Routing failures by step (presence lookup, publish); recipients catch up by resend and pull."}, []string{"step"}),
		stale: prometheus.NewCounter(prometheus.CounterOpts{Namespace: "nexo", Subsystem: "cluster", Name: "inbox_stale_total",
			Help: "Envelopes dropped on arrival for being older than cluster.inbox_max_age."}),
		noConn: prometheus.NewCounter(prometheus.CounterOpts{Namespace: "nexo", Subsystem: "cluster", Name: "inbox_no_connection_total",
			Help: "Pushes from the inbox (per recipient) that found no connection of the user here (disconnected meanwhile); a sender copy that only the excepted sending connection would have taken is not counted."}),
		batch: prometheus.NewHistogram(prometheus.HistogramOpts{Namespace: "nexo", Subsystem: "cluster", Name: "outbox_batch_size",
			Help:    "Pushes routed per outbox flush (one presence lookup and one envelope per target instance each).",
			Buckets: prometheus.ExponentialBuckets(1, 2, 10)}),
	}
	if reg != nil {
		for _, c := range []prometheus.Collector{m.sent, m.received, m.errors, m.stale, m.noConn, m.batch} {
			if err := reg.Register(c); err != nil {
				return nil, err
			}
		}
	}
	return m, nil
}
