package media

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/nexo-im/nexo/domain"
)

type metrics struct {
	uploads      *prometheus.CounterVec
	bytes        prometheus.Counter
	refusals     *prometheus.CounterVec
	thumbLatency prometheus.Histogram
	stored       prometheus.Gauge
	cleaned      *prometheus.CounterVec
}

func newMetrics(reg prometheus.Registerer) *metrics {
	m := &metrics{
		uploads: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "nexo", Name: "object_uploads_total",
			Help: "Uploads by kind: direct (POST /object/upload), multipart_initiated, multipart (completed).",
		}, []string{"kind"}),
		bytes: prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: "nexo", Name: "object_upload_bytes_total", Help: "Bytes of completed uploads.",
		}),
		refusals: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "nexo", Name: "object_refusals_total",
			Help: "Uploads, downloads and attachments refused, by cause (type mismatch, quota, access...).",
		}, []string{"cause"}),
		thumbLatency: prometheus.NewHistogram(prometheus.HistogramOpts{
			Namespace: "nexo", Name: "object_thumbnail_seconds", Help: "Time to make one thumbnail (read, decode, scale, encode, store).",
			Buckets: prometheus.ExponentialBuckets(0.005, 2, 12),
		}),
		stored: prometheus.NewGauge(prometheus.GaugeOpts{
			Namespace: "nexo", Name: "object_stored_bytes", Help: "Bytes of complete objects, as of the cleaner's last pass.",
		}),
		cleaned: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "nexo", Name: "object_cleaned_total", Help: "Objects deleted: orphan (carried by no readable message), upload (multipart never completed) or erased (an account's own, at its deletion).",
		}, []string{"kind"}),
	}
	// Every kind and the usual causes exist at 0 from the start, so a
	// dashboard's rate() has a series before the first upload or refusal.
	for _, kind := range []string{"direct", "multipart_initiated", "multipart"} {
		m.uploads.WithLabelValues(kind)
	}
	for _, cause := range []error{domain.ErrObjectTypeMismatch, domain.ErrObjectTypeRefused, domain.ErrImageTooLarge,
		domain.ErrObjectNameInvalid, domain.ErrObjectAccessDenied, domain.ErrObjectTooLarge, domain.ErrQuotaExceeded,
		domain.ErrObjectIncomplete, domain.ErrInvalidArgument} {
		m.refusals.WithLabelValues(cause.Error())
	}
	if reg != nil {
		reg.MustRegister(m.uploads, m.bytes, m.refusals, m.thumbLatency, m.stored, m.cleaned)
	}
	return m
}
