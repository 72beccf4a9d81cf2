package workers

import (
	"context"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"

	"github.com/nexo-im/nexo/streams"
)

// Metrics are the stages' Prometheus metrics.
type Metrics struct {
	SavedLag    prometheus.Histogram // accepted -> saved, seconds
	SaveBatch   prometheus.Histogram // entries per save batch
	DeadLetters prometheus.Counter
	Delivered   prometheus.Counter // messages handed to the fanout
	DeliverLag  prometheus.Histogram
}

// NewMetrics registers the stages' metrics on reg (nil: unregistered, for tests).
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		SavedLag: prometheus.NewHistogram(prometheus.HistogramOpts{
			Namespace: "nexo", Name: "accepted_to_saved_seconds",
			Help:    "Lag from ACK(accepted) to the database commit of a message.",
			Buckets: prometheus.ExponentialBuckets(0.0005, 2, 16),
		}),
		SaveBatch: prometheus.NewHistogram(prometheus.HistogramOpts{
			Namespace: "nexo", Name: "save_batch_size", Help: "Entries per save-stage batch.",
			Buckets: prometheus.ExponentialBuckets(1, 2, 12),
		}),
		DeadLetters: prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: "nexo", Name: "dead_letters_total", Help: "Entries parked in a dead-letter stream.",
		}),
		Delivered: prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: "nexo", Name: "deliver_messages_total", Help: "Messages fanned out by the deliver stage.",
		}),
		DeliverLag: prometheus.NewHistogram(prometheus.HistogramOpts{
			Namespace: "nexo", Name: "accepted_to_delivered_seconds",
			Help:    "Lag from ACK(accepted) to the deliver stage pushing a message.",
			Buckets: prometheus.ExponentialBuckets(0.0005, 2, 16),
		}),
	}
	if reg != nil {
		reg.MustRegister(m.SavedLag, m.SaveBatch, m.DeadLetters, m.Delivered, m.DeliverLag)
	}
	return m
}

// StreamCollector reports each shard's stream length and its group's
// pending entries at scrape time.
type StreamCollector struct {
	rdb     redis.UniversalClient
	keys    streams.Keys
	length  *prometheus.Desc
	pending *prometheus.Desc
}

// NewStreamCollector returns a collector over every shard's streams.
func NewStreamCollector(rdb redis.UniversalClient, keys streams.Keys) *StreamCollector {
	return &StreamCollector{
		rdb: rdb, keys: keys,
		length: prometheus.NewDesc("nexo_stream_length", "Entries in a shard's stream (XLEN).",
			[]string{"shard", "stream"}, nil),
		pending: prometheus.NewDesc("nexo_stream_pending", "Pending entries of a stream's consumer group (XPENDING).",
			[]string{"shard", "stream", "group"}, nil),
	}
}

// Describe implements prometheus.Collector.
func (c *StreamCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.length; ch <- c.pending }

// Collect implements prometheus.Collector.
func (c *StreamCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	for shard := 0; shard < c.keys.Shards(); shard++ {
		s := strconv.Itoa(shard)
		for _, st := range []struct{ name, key, group string }{
			{"to_save", c.keys.ToSave(shard), streams.GroupSave},
			{"to_deliver", c.keys.ToDeliver(shard), streams.GroupDeliver},
			{"dead", c.keys.Dead(shard), ""},
		} {
			if n, err := c.rdb.XLen(ctx, st.key).Result(); err == nil {
				ch <- prometheus.MustNewConstMetric(c.length, prometheus.GaugeValue, float64(n), s, st.name)
			}
			if st.group == "" {
				continue
			}
			if p, err := c.rdb.XPending(ctx, st.key, st.group).Result(); err == nil {
				ch <- prometheus.MustNewConstMetric(c.pending, prometheus.GaugeValue, float64(p.Count), s, st.name, st.group)
			}
		}
	}
}
