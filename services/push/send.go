package push

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"

	"github.com/nexo-im/nexo/configs"
	"github.com/nexo-im/nexo/streams"
)

// SendGroup is the consumer group of the send streams.
const SendGroup = "push-send"

// sendCount is the most jobs one read of a send stream takes.
const sendCount = 256

// GoneDevices forgets a device whose token the provider says is gone
// (store.PushDeviceRepo).
type GoneDevices interface {
	DeleteGone(ctx context.Context, id, token string) error
}

// Metrics are the push metrics, shared by the providers' senders.
type Metrics struct {
	sent    *prometheus.CounterVec
	failed  *prometheus.CounterVec
	dead    *prometheus.CounterVec
	latency *prometheus.HistogramVec
}

// NewMetrics registers the push metrics on reg (nil: unregistered).
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		sent: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "nexo_push_sent_total",
			Help: "Notifications a provider accepted, by provider."}, []string{"provider"}),
		failed: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "nexo_push_failed_total",
			Help: "Failed sends, by provider and reason (gone, rate_limited, unavailable, rejected, auth, network)."}, []string{"provider", "reason"}),
		dead: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "nexo_push_dead_lettered_total",
			Help: "Notifications given up on after push.max_attempts or a permanent refusal, by provider."}, []string{"provider"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "nexo_push_latency_seconds",
			Help:    "From the message's ACK(saved) to the provider's accepting answer.",
			Buckets: []float64{.01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 300}}, []string{"provider"}),
	}
	if reg != nil {
		reg.MustRegister(m.sent, m.failed, m.dead, m.latency)
	}
	return m
}

// Sender is one provider's send stage: it reads the provider's send
// stream on a streams.Consumer and sends each job, push.<provider>.
// concurrency at once. A sent job is acknowledged and deleted; a gone
// token forgets the device; a job that may succeed later stays pending and
// is retried after push.retry_backoff doubling up to retry_backoff_max,
// and never before the provider's Retry-After (the whole provider waits:
// the answer is about our rate, not one device); after push.max_attempts,
// or refused for good, it goes to the dead-letter stream.
type Sender struct {
	name     string
	rdb      redis.UniversalClient
	keys     Keys
	cfg      configs.Push
	conc     int
	provider Provider
	gone     GoneDevices
	m        *Metrics
	log      *slog.Logger
	consumer *streams.Consumer
	now      func() time.Time

	mu        sync.Mutex
	notBefore time.Time // the provider's Retry-After
}

// SenderDeps are a Sender's collaborators.
type SenderDeps struct {
	Redis       redis.UniversalClient
	Keys        Keys
	Config      configs.Push
	Name        string // fcm, apns, webpush
	Concurrency int
	Provider    Provider
	Gone        GoneDevices
	Metrics     *Metrics
	Consumer    string
	Log         *slog.Logger
}

// NewSender returns the stage.
func NewSender(d SenderDeps) *Sender {
	s := &Sender{name: d.Name, rdb: d.Redis, keys: d.Keys, cfg: d.Config, conc: max(d.Concurrency, 1), provider: d.Provider,
		gone: d.Gone, m: d.Metrics, log: d.Log.With("component", "push sender", "provider", d.Name), now: time.Now}
	stream := d.Keys.Send(d.Name)
	s.consumer = streams.NewConsumer(d.Redis, streams.ConsumerConfig{
		Stream: stream, Group: SendGroup, Consumer: d.Consumer, Count: sendCount, Block: time.Second,
		// A job idle retry_backoff is in no one's hands: failed, or left by
		// an instance that is gone.
		ClaimMinIdle: d.Config.RetryBackoff, ClaimEvery: min(d.Config.RetryBackoff/2, time.Second),
		TrimInterval: time.Minute,
		Retry:        streams.RetryPolicy{MaxAttempts: d.Config.MaxAttempts, Backoff: d.Config.RetryBackoff, BackoffMax: d.Config.RetryBackoffMax},
		DeadLetter: &streams.DeadLetters{Redis: d.Redis, Input: stream, Group: SendGroup, Stream: d.Keys.Dead,
			MaxLen: d.Config.DeadMaxLen, BodyField: jobField, MaxBody: 4096, DeleteInput: true, Parked: s.parked},
	}, s.log)
	return s
}

// EnsureGroup creates the send stream and its group if missing.
func (s *Sender) EnsureGroup(ctx context.Context) error {
	return streams.EnsureGroup(ctx, s.rdb, s.keys.Send(s.name), SendGroup)
}

// Run sends until ctx is done, finishing the read in hand.
func (s *Sender) Run(ctx context.Context) error { return s.consumer.Run(ctx, s.handle) }

func (s *Sender) parked(_ context.Context, dead []streams.Dead) {
	s.m.dead.WithLabelValues(s.name).Add(float64(len(dead)))
	for _, x := range dead {
		s.log.Warn("push notification dead-lettered", "entry", x.Entry.ID, "attempts", x.Attempts, "err", x.Err)
	}
}

// wait holds the stage until the provider's Retry-After has passed.
func (s *Sender) wait(ctx context.Context) error {
	s.mu.Lock()
	until := s.notBefore
	s.mu.Unlock()
	d := until.Sub(s.now())
	if d <= 0 {
		return nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// pause records a Retry-After (capped by push.retry_after_max).
func (s *Sender) pause(d time.Duration) {
	if s.cfg.RetryAfterMax > 0 {
		d = min(d, s.cfg.RetryAfterMax)
	}
	until := s.now().Add(d)
	s.mu.Lock()
	if until.After(s.notBefore) {
		s.notBefore = until
	}
	s.mu.Unlock()
}

func (s *Sender) handle(ctx context.Context, entries []redis.XMessage) error {
	if err := s.wait(ctx); err != nil {
		return err
	}
	failures := streams.Failures{}
	var done []string
	var mu sync.Mutex
	sem := make(chan struct{}, s.conc)
	var wg sync.WaitGroup
	for _, e := range entries {
		raw, _ := e.Values[jobField].(string)
		var j job
		if err := json.Unmarshal([]byte(raw), &j); err != nil || j.Device.Token == "" {
			failures[e.ID] = streams.Permanent(fmt.Errorf("malformed push job: %v", err))
			continue
		}
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			err := s.send(ctx, j)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				failures[e.ID] = err
			} else {
				done = append(done, e.ID)
			}
		}()
	}
	wg.Wait()
	if err := streams.AckDelete(ctx, s.rdb, s.keys.Send(s.name), SendGroup, done); err != nil {
		// Not acknowledged: sent again (at least once).
		s.log.Warn("push ack failed", "entries", len(done), "err", err)
	}
	return failures.Err()
}

// send sends one job: nil when it is finished (sent, or its device gone).
func (s *Sender) send(ctx context.Context, j job) error {
	cctx, cancel := context.WithTimeout(ctx, s.cfg.Timeout)
	err := s.provider.Send(cctx, j.Device, j.N)
	cancel()
	if err == nil {
		s.m.sent.WithLabelValues(s.name).Inc()
		if j.N.SavedAt > 0 {
			s.m.latency.WithLabelValues(s.name).Observe(float64(s.now().UnixMilli()-j.N.SavedAt) / 1000)
		}
		return nil
	}
	var se *SendError
	if !errors.As(err, &se) {
		se = &SendError{Reason: "rejected", Detail: err.Error()}
	}
	s.m.failed.WithLabelValues(s.name, se.Reason).Inc()
	switch {
	case se.Gone:
		if err := s.gone.DeleteGone(ctx, j.Device.ID, j.Device.Token); err != nil {
			return err // retried: the device must go
		}
		s.log.Info("push token gone: device forgotten", "device_id", j.Device.ID, "user_id", j.N.UserID, "status", se.Status)
		return nil
	case se.Retryable:
		if se.RetryAfter > 0 {
			s.pause(se.RetryAfter)
		}
		return se
	}
	return streams.Permanent(se)
}
