package webhook

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"

	"github.com/nexo-im/nexo/configs"
	"github.com/nexo-im/nexo/streams"
)

// Group is the consumer group of the event stream; every instance joins it
// with its stable consumer name, so each event goes to one instance.
const Group = "webhooks"

// readCount is the most events one read takes.
const readCount = configs.MaxWebhookBatch

// bodyField is the entry field holding an event's JSON body.
const bodyField = "body"

// Deliverer sends the event stream's entries to their URLs, at least once,
// on a streams.Consumer: an entry is acknowledged (and deleted) only after
// a 2xx answer. A failed entry stays pending and is retried after
// webhooks.retry_backoff, doubling per attempt up to retry_backoff_max;
// after webhooks.max_attempts it is moved to the dead-letter stream
// (streams.DeadLetters: at most webhooks.dead_max_len entries, bodies cut
// to webhooks.dead_max_body_bytes). Pending entries survive a restart (and
// another instance takes over those of a consumer that is gone), so an
// event is delivered even across a crash — possibly twice: receivers
// deduplicate on the event id.
type Deliverer struct {
	rdb      redis.UniversalClient
	keys     Keys
	cfg      configs.Webhooks
	client   *Client
	log      *slog.Logger
	m        *deliverMetrics
	consumer *streams.Consumer
}

type deliverMetrics struct {
	delivered *prometheus.CounterVec
	failed    *prometheus.CounterVec
	dead      *prometheus.CounterVec
	lag       prometheus.Histogram
}

// NewDeliverer returns the consumer; consumer is this instance's stable
// name; reg may be nil.
func NewDeliverer(rdb redis.UniversalClient, keys Keys, consumer string, cfg configs.Webhooks, client *Client, reg prometheus.Registerer, log *slog.Logger) *Deliverer {
	m := &deliverMetrics{
		delivered: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "nexo_webhook_delivered_total", Help: "Asynchronous webhook events delivered (2xx), by event."}, []string{"event"}),
		failed:    prometheus.NewCounterVec(prometheus.CounterOpts{Name: "nexo_webhook_failed_attempts_total", Help: "Failed delivery attempts (to be retried), by event."}, []string{"event"}),
		dead:      prometheus.NewCounterVec(prometheus.CounterOpts{Name: "nexo_webhook_dead_lettered_total", Help: "Events moved to the dead-letter stream after webhooks.max_attempts, by event."}, []string{"event"}),
		lag: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "nexo_webhook_delivery_lag_seconds", Help: "From the event's append to its successful delivery.",
			Buckets: []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 300}}),
	}
	if reg != nil {
		reg.MustRegister(m.delivered, m.failed, m.dead, m.lag)
	}
	d := &Deliverer{rdb: rdb, keys: keys, cfg: cfg, client: client, log: log, m: m}
	d.consumer = streams.NewConsumer(rdb, streams.ConsumerConfig{
		Stream: keys.Events, Group: Group, Consumer: consumer, Count: readCount, Block: time.Second,
		// An entry idle retry_backoff is in no one's hands (the consumer
		// keeps the entries it is posting fresh): failed, or left by an
		// instance that is gone.
		ClaimMinIdle: cfg.RetryBackoff, ClaimEvery: min(cfg.RetryBackoff/2, time.Second),
		// Delivered entries are deleted at once; trimming only catches
		// what a failed delete left.
		TrimInterval: time.Minute,
		Retry:        streams.RetryPolicy{MaxAttempts: cfg.MaxAttempts, Backoff: cfg.RetryBackoff, BackoffMax: cfg.RetryBackoffMax},
		DeadLetter: &streams.DeadLetters{Redis: rdb, Input: keys.Events, Group: Group, Stream: keys.Dead,
			MaxLen: cfg.DeadMaxLen, BodyField: bodyField, MaxBody: cfg.DeadMaxBodyBytes, DeleteInput: true, Parked: d.parked},
	}, log.With("component", "webhook deliverer"))
	return d
}

// EnsureGroup creates the consumer group (and the stream) if missing,
// reading from the stream's start so nothing appended before is skipped.
func (d *Deliverer) EnsureGroup(ctx context.Context) error {
	return streams.EnsureGroup(ctx, d.rdb, d.keys.Events, Group)
}

// Run delivers until ctx is done; deliveries in flight finish (bounded by
// webhooks.timeout) before it returns.
func (d *Deliverer) Run(ctx context.Context) error {
	return d.consumer.Run(ctx, d.handle)
}

// handle delivers one read of entries, acknowledges and deletes the
// delivered ones in one round trip, and returns the failed ones to the
// consumer (retried, then dead-lettered).
func (d *Deliverer) handle(ctx context.Context, entries []redis.XMessage) error {
	done, failures := d.deliverAll(ctx, entries)
	if err := streams.AckDelete(ctx, d.rdb, d.keys.Events, Group, done); err != nil {
		// Not acknowledged: they will be delivered again (at least once).
		d.log.Warn("webhook ack failed", "entries", len(done), "err", err)
	}
	return failures.Err()
}

// parked hears of events dead-lettered.
func (d *Deliverer) parked(_ context.Context, dead []streams.Dead) {
	for _, x := range dead {
		event, _ := x.Entry.Values["event"].(string)
		d.m.dead.WithLabelValues(event).Inc()
		d.log.Warn("webhook event dead-lettered", "event", event, "entry", x.Entry.ID, "attempts", x.Attempts, "err", x.Err)
	}
}

// deliverAll posts entries concurrently (webhooks.workers at once), each
// request carrying up to webhooks.batch_size of them, and returns the IDs
// delivered and the entries of the requests that failed.
func (d *Deliverer) deliverAll(ctx context.Context, entries []redis.XMessage) ([]string, streams.Failures) {
	sem := make(chan struct{}, max(d.cfg.Workers, 1))
	var mu sync.Mutex
	var done []string
	failures := streams.Failures{}
	var wg sync.WaitGroup
	for _, b := range d.batches(entries) {
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			err := d.deliver(ctx, b)
			mu.Lock()
			defer mu.Unlock()
			for _, x := range b.entries {
				if err != nil {
					failures[x.ID] = err
				} else {
					done = append(done, x.ID)
				}
			}
		}()
	}
	wg.Wait()
	return done, failures
}

// batch is one request: entries going to url, in stream order.
type batch struct {
	url     string
	entries []redis.XMessage
}

// batches groups entries by URL into requests of at most
// webhooks.batch_size entries, keeping stream order within a URL. An entry
// whose event has no URL any more (disabled since it was appended) is
// acknowledged without a request.
func (d *Deliverer) batches(entries []redis.XMessage) []batch {
	var out []batch
	open := map[string]int{} // url -> index in out of its batch being filled
	for _, x := range entries {
		event, _ := x.Values["event"].(string)
		url := d.cfg.EventURL(event)
		i, ok := open[url]
		if !ok || len(out[i].entries) >= max(d.cfg.BatchSize, 1) {
			out = append(out, batch{url: url})
			i = len(out) - 1
			open[url] = i
		}
		out[i].entries = append(out[i].entries, x)
	}
	return out
}

// deliver posts one request; nil when the receiver took it. A single event
// is its own body (X-Nexo-Event and X-Nexo-Delivery name it); several are
// {"events": [...]} with X-Nexo-Event "batch" and a fresh delivery ID, each
// event keeping its own id for deduplication.
func (d *Deliverer) deliver(ctx context.Context, b batch) error {
	if b.url == "" {
		return nil // the event was disabled since it was appended
	}
	event, id, body := d.requestOf(b.entries)
	cctx, cancel := context.WithTimeout(ctx, d.cfg.Timeout)
	defer cancel()
	if _, err := d.client.Post(cctx, b.url, event, id, body); err != nil {
		for _, x := range b.entries {
			ev, _ := x.Values["event"].(string)
			d.m.failed.WithLabelValues(ev).Inc()
		}
		d.log.Debug("webhook delivery failed, will retry", "event", event, "id", id, "events", len(b.entries), "err", err)
		return err
	}
	for _, x := range b.entries {
		ev, _ := x.Values["event"].(string)
		d.m.delivered.WithLabelValues(ev).Inc()
		if ms, ok := entryMillis(x.ID); ok {
			d.m.lag.Observe(time.Since(time.UnixMilli(ms)).Seconds())
		}
	}
	return nil
}

// requestOf is the X-Nexo-Event, X-Nexo-Delivery and body of a request
// carrying entries.
func (d *Deliverer) requestOf(entries []redis.XMessage) (event, id string, body []byte) {
	if len(entries) == 1 {
		x := entries[0]
		event, _ = x.Values["event"].(string)
		id, _ = x.Values["id"].(string)
		b, _ := x.Values["body"].(string)
		return event, id, []byte(b)
	}
	n := len(`{"events":[]}`)
	for _, x := range entries {
		b, _ := x.Values["body"].(string)
		n += len(b) + 1
	}
	body = make([]byte, 0, n)
	body = append(body, `{"events":[`...)
	for i, x := range entries {
		if i > 0 {
			body = append(body, ',')
		}
		b, _ := x.Values["body"].(string)
		body = append(body, b...)
	}
	body = append(body, "]}"...)
	return configs.EventBatch, "batch:" + uuid.NewString(), body
}

// entryMillis reads the append time from a stream entry ID.
func entryMillis(id string) (int64, bool) {
	ms, _, ok := strings.Cut(id, "-")
	if !ok {
		return 0, false
	}
	var n int64
	for _, c := range ms {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int64(c-'0')
	}
	return n, true
}
