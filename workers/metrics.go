package workers

import (
	"context"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"

	"github.com/nexo-im/nexo/store"
	"github.com/nexo-im/nexo/streams"
)

// Metrics are the stages' Prometheus metrics.
type Metrics struct {
	SavedLag    prometheus.Histogram // accepted -> saved, seconds
	SaveBatch   prometheus.Histogram // entries per save batch
	DeadLetters prometheus.Counter
	Delivered   prometheus.Counter // messages handed to the fanout
	DeliverLag  prometheus.Histogram
	// DirectDeliveries counts the messages of Delivered that the save
	// stage pushed itself, sparing their pass through to_deliver.
	DirectDeliveries prometheus.Counter

	// Per stage (save, deliver): messages handled, and the Redis round
	// trips, SQL statements and database round trips made while handling
	// them (Ops), so a
	// dashboard divides one by the other for the cost per message.
	StageMessages *prometheus.CounterVec
	ops           map[string]*store.OpCounter
	// DeliverFailures counts deliver batches that failed (retried).
	DeliverFailures prometheus.Counter
	// PublishFailures counts stage commits (forward to the next stream,
	// dead-letter, acknowledge) that Redis refused, by stage.
	PublishFailures *prometheus.CounterVec
	// SaveDuplicates counts entries the database already held (a retry
	// accepted twice; resolved to the original).
	SaveDuplicates prometheus.Counter
}

// Ops is the counter a stage's Handle puts in its context
// (store.WithOpCounter).
func (m *Metrics) Ops(stage string) *store.OpCounter { return m.ops[stage] }

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
		DirectDeliveries: prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: "nexo", Name: "deliver_direct_total",
			Help: "Saved messages the save stage pushed itself (of nexo_deliver_messages_total), without a pass through to_deliver.",
		}),
		DeliverFailures: prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: "nexo", Name: "deliver_failures_total",
			Help: "Deliver-stage batches that failed and are retried (group fanout errors, commit errors), and direct pushes by the save stage that failed (forwarded to the deliver stage).",
		}),
		PublishFailures: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "nexo", Name: "stream_publish_failures_total",
			Help: "Stage commits Redis refused (forward to the next stream, dead-letter, acknowledge), by stage; the batch is retried.",
		}, []string{"stage"}),
		SaveDuplicates: prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: "nexo", Name: "save_duplicates_total",
			Help: "Entries the save stage found already in the database (uk_sender_client_msg), resolved to the original.",
		}),
	}
	m.StageMessages = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: "nexo", Name: "stage_messages_total", Help: "Stream entries handled by a pipeline stage.",
	}, []string{"stage"})
	m.ops = map[string]*store.OpCounter{streams.GroupSave: {}, streams.GroupDeliver: {}}
	// Pre-create the labelled series so dashboards and alerts see zeros.
	m.PublishFailures.WithLabelValues("save")
	m.PublishFailures.WithLabelValues("deliver")
	collectors := []prometheus.Collector{m.SavedLag, m.SaveBatch, m.DeadLetters, m.Delivered, m.DeliverLag, m.DirectDeliveries, m.StageMessages,
		m.DeliverFailures, m.PublishFailures, m.SaveDuplicates}
	for stage, c := range m.ops {
		labels := prometheus.Labels{"stage": stage}
		collectors = append(collectors,
			prometheus.NewCounterFunc(prometheus.CounterOpts{
				Namespace: "nexo", Name: "stage_redis_calls_total", ConstLabels: labels,
				Help: "Redis round trips (a pipeline is one) a pipeline stage made handling its batches (the XREADGROUP that fetched a batch not included).",
			}, func() float64 { return float64(c.Redis.Load()) }),
			prometheus.NewCounterFunc(prometheus.CounterOpts{
				Namespace: "nexo", Name: "stage_db_statements_total", ConstLabels: labels,
				Help: "SQL statements a pipeline stage ran handling its batches (BEGIN and COMMIT not included).",
			}, func() float64 { return float64(c.DB.Load()) }),
			prometheus.NewCounterFunc(prometheus.CounterOpts{
				Namespace: "nexo", Name: "stage_db_round_trips_total", ConstLabels: labels,
				Help: "Database round trips a pipeline stage made handling its batches (a multi-statement query is one; separate BEGIN and COMMIT not included).",
			}, func() float64 { return float64(c.DBTrips.Load()) }),
		)
	}
	if reg != nil {
		reg.MustRegister(collectors...)
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
			{"to_save", c.keys.ToSave(shard), c.keys.SaveGroup()},
			{"to_deliver", c.keys.ToDeliver(shard), c.keys.DeliverGroup()},
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
