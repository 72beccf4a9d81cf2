package webhook

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"

	"github.com/nexo-im/nexo/configs"
)

// Group is the consumer group of the event stream; every instance joins it
// with its stable consumer name, so each event goes to one instance.
const Group = "webhooks"

// readCount is the most events one read takes.
const readCount = configs.MaxWebhookBatch

// Deliverer sends the event stream's entries to their URLs, at least once:
// an entry is acknowledged (and deleted) only after a 2xx answer. A failed
// entry stays pending and is retried after webhooks.retry_backoff, doubling
// per attempt up to retry_backoff_max; after webhooks.max_attempts it is
// moved to the dead-letter stream. Pending entries survive a restart (and
// another instance takes over those of a consumer that is gone), so an
// event is delivered even across a crash — possibly twice: receivers
// deduplicate on the event id.
type Deliverer struct {
	rdb      redis.UniversalClient
	keys     Keys
	consumer string
	cfg      configs.Webhooks
	client   *Client
	log      *slog.Logger
	m        *deliverMetrics
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
	return &Deliverer{rdb: rdb, keys: keys, consumer: consumer, cfg: cfg, client: client, log: log, m: m}
}

// EnsureGroup creates the consumer group (and the stream) if missing,
// reading from the stream's start so nothing appended before is skipped.
func (d *Deliverer) EnsureGroup(ctx context.Context) error {
	err := d.rdb.XGroupCreateMkStream(ctx, d.keys.Events, Group, "0").Err()
	if err != nil && !strings.Contains(err.Error(), "BUSYGROUP") {
		return fmt.Errorf("create webhook consumer group: %w", err)
	}
	return nil
}

// Run delivers until ctx is done; deliveries in flight finish (bounded by
// webhooks.timeout) before it returns.
func (d *Deliverer) Run(ctx context.Context) error {
	if err := d.EnsureGroup(ctx); err != nil {
		return err
	}
	retryEvery := min(d.cfg.RetryBackoff/2, time.Second)
	nextRetry := time.Now()
	for ctx.Err() == nil {
		if time.Now().After(nextRetry) {
			d.retryPending(ctx)
			nextRetry = time.Now().Add(retryEvery)
		}
		res, err := d.rdb.XReadGroup(ctx, &redis.XReadGroupArgs{
			Group: Group, Consumer: d.consumer, Streams: []string{d.keys.Events, ">"}, Count: readCount, Block: retryEvery,
		}).Result()
		if errors.Is(err, redis.Nil) || ctx.Err() != nil {
			continue
		}
		if err != nil {
			if strings.Contains(err.Error(), "NOGROUP") {
				_ = d.EnsureGroup(ctx)
			}
			d.log.Warn("webhook read failed", "err", err)
			select {
			case <-ctx.Done():
			case <-time.After(retryEvery):
			}
			continue
		}
		for _, s := range res {
			d.deliverAll(context.WithoutCancel(ctx), s.Messages)
		}
	}
	return nil
}

// deliverAll posts entries concurrently (webhooks.workers at once), each
// request carrying up to webhooks.batch_size of them, and acknowledges the
// delivered ones in one round trip.
func (d *Deliverer) deliverAll(ctx context.Context, entries []redis.XMessage) {
	sem := make(chan struct{}, d.cfg.Workers)
	var mu sync.Mutex
	var done []string
	var wg sync.WaitGroup
	for _, b := range d.batches(entries) {
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			if d.deliver(ctx, b) {
				mu.Lock()
				for _, x := range b.entries {
					done = append(done, x.ID)
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	d.ack(ctx, done)
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

// deliver posts one request and reports whether the receiver took it. A
// single event is its own body (X-Nexo-Event and X-Nexo-Delivery name it);
// several are {"events": [...]} with X-Nexo-Event "batch" and a fresh
// delivery ID, each event keeping its own id for deduplication.
func (d *Deliverer) deliver(ctx context.Context, b batch) bool {
	if b.url == "" {
		return true // the event was disabled since it was appended
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
		return false
	}
	for _, x := range b.entries {
		ev, _ := x.Values["event"].(string)
		d.m.delivered.WithLabelValues(ev).Inc()
		if ms, ok := entryMillis(x.ID); ok {
			d.m.lag.Observe(time.Since(time.UnixMilli(ms)).Seconds())
		}
	}
	return true
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

// ack acknowledges and deletes delivered entries (the stream keeps only
// what is pending).
func (d *Deliverer) ack(ctx context.Context, ids []string) {
	if len(ids) == 0 {
		return
	}
	_, err := d.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		p.XAck(ctx, d.keys.Events, Group, ids...)
		p.XDel(ctx, d.keys.Events, ids...)
		return nil
	})
	if err != nil {
		// Not acknowledged: they will be delivered again (at least once).
		d.log.Warn("webhook ack failed", "entries", len(ids), "err", err)
	}
}

// backoff is the wait before attempt n+1 after n failed attempts.
func (d *Deliverer) backoff(n int64) time.Duration {
	b := d.cfg.RetryBackoff
	for i := int64(1); i < n && b < d.cfg.RetryBackoffMax; i++ {
		b *= 2
	}
	return min(b, d.cfg.RetryBackoffMax)
}

// retryPending retries pending entries whose backoff has passed (any
// consumer's: a restarted or vanished instance's entries are taken over)
// and dead-letters those out of attempts.
func (d *Deliverer) retryPending(ctx context.Context) {
	pending, err := d.rdb.XPendingExt(ctx, &redis.XPendingExtArgs{
		Stream: d.keys.Events, Group: Group, Start: "-", End: "+", Count: 256, Idle: d.cfg.RetryBackoff,
	}).Result()
	if err != nil {
		if !errors.Is(err, redis.Nil) && ctx.Err() == nil {
			d.log.Warn("webhook pending scan failed", "err", err)
		}
		return
	}
	var retry []string
	for _, p := range pending {
		switch {
		case p.RetryCount >= int64(d.cfg.MaxAttempts):
			d.deadLetter(ctx, p.ID, p.RetryCount)
		case p.Idle >= d.backoff(p.RetryCount):
			retry = append(retry, p.ID)
		}
	}
	if len(retry) == 0 {
		return
	}
	claimed, err := d.rdb.XClaim(ctx, &redis.XClaimArgs{
		Stream: d.keys.Events, Group: Group, Consumer: d.consumer, MinIdle: d.cfg.RetryBackoff, Messages: retry,
	}).Result()
	if err != nil {
		d.log.Warn("webhook claim failed", "err", err)
		return
	}
	d.deliverAll(context.WithoutCancel(ctx), claimed)
}

// deadLetter moves an entry out of attempts to the dead-letter stream.
func (d *Deliverer) deadLetter(ctx context.Context, id string, attempts int64) {
	entries, err := d.rdb.XRangeN(ctx, d.keys.Events, id, id, 1).Result()
	if err != nil {
		d.log.Warn("webhook dead-letter read failed", "entry", id, "err", err)
		return
	}
	event := ""
	_, err = d.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		if len(entries) == 1 {
			x := entries[0]
			event, _ = x.Values["event"].(string)
			p.XAdd(ctx, &redis.XAddArgs{Stream: d.keys.Dead, MaxLen: 100000, Approx: true, Values: []any{
				"event", x.Values["event"], "id", x.Values["id"], "body", x.Values["body"], "attempts", attempts, "source_entry", id}})
		}
		p.XAck(ctx, d.keys.Events, Group, id)
		p.XDel(ctx, d.keys.Events, id)
		return nil
	})
	if err != nil {
		d.log.Warn("webhook dead-letter failed", "entry", id, "err", err)
		return
	}
	d.m.dead.WithLabelValues(event).Inc()
	d.log.Warn("webhook event dead-lettered", "event", event, "entry", id, "attempts", attempts)
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
