// Package webhook calls the app's backend: the synchronous before_send
// hook, and the asynchronous events (after_send, user_online,
// user_offline, group_changed, offline_push) that are appended to a Redis
// stream and delivered at least once, with retries, backoff and a
// dead-letter stream, by a consumer that never blocks the message
// pipeline. Every request is signed (see Sign). docs/webhooks.md is the
// reference for receivers.
package webhook

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Request headers of every webhook call.
const (
	HeaderEvent     = "X-Nexo-Event"
	HeaderDelivery  = "X-Nexo-Delivery"
	HeaderTimestamp = "X-Nexo-Timestamp"
	HeaderSignature = "X-Nexo-Signature"
)

// Sign returns the X-Nexo-Signature value for body sent at ts (Unix
// seconds): "sha256=" + hex(HMAC-SHA256(secret, "<ts>.<body>")). A receiver
// recomputes it, compares in constant time and refuses stale timestamps.
func Sign(secret []byte, ts int64, body []byte) string {
	mac := hmac.New(sha256.New, secret)
	mac.Write([]byte(strconv.FormatInt(ts, 10)))
	mac.Write([]byte{'.'})
	mac.Write(body)
	return "sha256=" + hex.EncodeToString(mac.Sum(nil))
}

// maxResponse caps how much of a receiver's answer is read.
const maxResponse = 64 << 10

// Client posts signed events and counts the outcomes.
type Client struct {
	secret  []byte
	http    *http.Client
	metrics *clientMetrics
}

type clientMetrics struct {
	calls    *prometheus.CounterVec
	duration *prometheus.HistogramVec
}

// NewClient returns a client signing with secret; reg may be nil.
func NewClient(secret string, reg prometheus.Registerer) *Client {
	m := &clientMetrics{
		calls: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "nexo_webhook_calls_total",
			Help: "Webhook HTTP calls by event and outcome (ok, error, timeout).",
		}, []string{"event", "outcome"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "nexo_webhook_call_seconds",
			Help:    "Webhook HTTP call duration by event.",
			Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5},
		}, []string{"event"}),
	}
	if reg != nil {
		reg.MustRegister(m.calls, m.duration)
	}
	transport := http.DefaultTransport.(*http.Transport).Clone()
	transport.MaxIdleConnsPerHost = 64
	return &Client{secret: []byte(secret), http: &http.Client{Transport: transport}, metrics: m}
}

// Post sends body to url as event (delivery names this attempt's event for
// the receiver's deduplication) and returns the response body of a 2xx
// answer. Any other status, a transport error or ctx's deadline is an
// error.
func (c *Client) Post(ctx context.Context, url, event, delivery string, body []byte) ([]byte, error) {
	began := time.Now()
	out, err := c.post(ctx, url, event, delivery, body)
	c.metrics.duration.WithLabelValues(event).Observe(time.Since(began).Seconds())
	outcome := "ok"
	switch {
	case err != nil && ctx.Err() != nil:
		outcome = "timeout"
	case err != nil:
		outcome = "error"
	}
	c.metrics.calls.WithLabelValues(event, outcome).Inc()
	return out, err
}

func (c *Client) post(ctx context.Context, url, event, delivery string, body []byte) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("webhook %s: %w", event, err)
	}
	ts := time.Now().Unix()
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "nexo-webhook")
	req.Header.Set(HeaderEvent, event)
	req.Header.Set(HeaderDelivery, delivery)
	req.Header.Set(HeaderTimestamp, strconv.FormatInt(ts, 10))
	req.Header.Set(HeaderSignature, Sign(c.secret, ts, body))
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, fmt.Errorf("webhook %s: %w", event, err)
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(io.LimitReader(resp.Body, maxResponse))
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return nil, fmt.Errorf("webhook %s: receiver answered %d", event, resp.StatusCode)
	}
	if err != nil {
		return nil, fmt.Errorf("webhook %s: read answer: %w", event, err)
	}
	return out, nil
}
