package streams

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/ThreeDotsLabs/watermill"
	"github.com/ThreeDotsLabs/watermill-nats/v2/pkg/jetstream"
	"github.com/ThreeDotsLabs/watermill-redisstream/pkg/redisstream"
	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/ThreeDotsLabs/watermill/pubsub/gochannel"
	natsJS "github.com/nats-io/nats.go/jetstream"
	"github.com/redis/go-redis/v9"
)

// Bus carries envelopes between instances (the cluster relay's pushes and
// session events, docs/cluster.md): each instance reads its own inbox and
// publishes to the others'. It is watermill's Publisher/Subscriber, so the
// broker changes without touching the relay. Delivery is at least once
// and, per (publisher, inbox), in publish order.
type Bus struct {
	name  string
	pub   message.Publisher
	sub   message.Subscriber
	topic func(instanceID string) string
}

// Name is the backend: redis, nats or gochannel.
func (b *Bus) Name() string { return b.name }

// Publish sends e to the inbox of instanceID; ctx travels with the message
// (watermill's Message.SetContext). An error means it was not published.
func (b *Bus) Publish(ctx context.Context, instanceID string, e BusEnvelope) error {
	msg := e.message()
	msg.SetContext(ctx)
	return b.pub.Publish(b.topic(instanceID), msg)
}

// Subscribe starts reading the inbox of instanceID (this instance's): every
// envelope published to it from now on can be received from the Inbox, in
// publish order. The subscription outlives ctx (a start-up context): it
// ends when the bus is closed.
func (b *Bus) Subscribe(ctx context.Context, instanceID string) (*Inbox, error) {
	topic := b.topic(instanceID)
	if init, ok := b.sub.(message.SubscribeInitializer); ok {
		if err := init.SubscribeInitialize(topic); err != nil && !strings.Contains(err.Error(), "already in use") {
			return nil, fmt.Errorf("cluster inbox %s: %w", topic, err)
		}
	}
	ch, err := b.sub.Subscribe(context.WithoutCancel(ctx), topic)
	if err != nil {
		return nil, fmt.Errorf("cluster inbox %s: %w", topic, err)
	}
	return &Inbox{ch: ch}, nil
}

// Close closes the subscriber, then the publisher (and the clients or
// connections they own).
func (b *Bus) Close() error {
	return errors.Join(b.sub.Close(), b.pub.Close())
}

// Inbox is a subscription to one instance's inbox (Bus.Subscribe).
type Inbox struct {
	ch <-chan *message.Message
}

// Delivery is one envelope read from an inbox.
type Delivery struct {
	Envelope BusEnvelope
	msg      *message.Message
}

// Ack tells the bus the envelope is handled (the in-process bus's Publish
// waits for it). Ack each delivery once.
func (d Delivery) Ack() { d.msg.Ack() }

// Receive waits for the next envelope; ok is false once ctx is done or the
// subscription ended (the bus closed).
func (in *Inbox) Receive(ctx context.Context) (d Delivery, ok bool) {
	select {
	case <-ctx.Done():
		return Delivery{}, false
	case msg, open := <-in.ch:
		if !open {
			return Delivery{}, false
		}
		return Delivery{Envelope: parseBusEnvelope(msg), msg: msg}, true
	}
}

// NewRedisBus is the bus on Redis Streams (watermill-redisstream): inbox
// "{prefix}:inbox:{instance id}", one stream per instance, read by that
// instance only (XREAD, no consumer group: an inbox has one reader and
// nothing to hand over). pub and sub must be clients of their own: the
// bus closes them. Each XADD trims its stream to about maxLen entries
// (redisstream never deletes anything by itself). self is this instance's
// id: its inbox is read from its current end, so a restarted instance
// skips what was sent to its earlier run (older than inbox_max_age anyway)
// and misses nothing published after NewRedisBus returns.
func NewRedisBus(ctx context.Context, pub, sub redis.UniversalClient, prefix, self string, maxLen int64, log *slog.Logger) (*Bus, error) {
	topic := func(id string) string { return prefix + ":inbox:" + id }
	start := "0"
	last, err := sub.XRevRangeN(ctx, topic(self), "+", "-", 1).Result()
	if err != nil {
		return nil, fmt.Errorf("redis bus: read the end of inbox %s: %w", topic(self), err)
	}
	if len(last) > 0 {
		start = last[0].ID
	}
	logger := wmLogger(log)
	p, err := redisstream.NewPublisher(redisstream.PublisherConfig{Client: pub, DefaultMaxlen: maxLen}, logger)
	if err != nil {
		return nil, fmt.Errorf("redis bus publisher: %w", err)
	}
	s, err := redisstream.NewSubscriber(redisstream.SubscriberConfig{
		Client:         sub,
		FanOutOldestId: start,
		BlockTime:      time.Second,
		// An empty inbox blocks BlockTime per read, not forever, so Close
		// is prompt.
		DisableIndefiniteInitialBlock: true,
	}, logger)
	if err != nil {
		_ = p.Close()
		return nil, fmt.Errorf("redis bus subscriber: %w", err)
	}
	return &Bus{name: "redis", pub: p, sub: s, topic: topic}, nil
}

// NewNATSBus is the bus on NATS JetStream (watermill-nats jetstream): one
// stream per inbox named "{prefix}_inbox_{instance id}" (dots become
// underscores), kept at most maxAge and maxLen messages by the server, read
// by an ephemeral consumer from the messages published after Subscribe.
func NewNATSBus(url, prefix string, maxAge time.Duration, maxLen int64, log *slog.Logger) (*Bus, error) {
	topic := func(id string) string {
		return strings.NewReplacer(".", "_", ":", "_", " ", "_").Replace(prefix + "_inbox_" + id)
	}
	streamCfg := func(t string) natsJS.StreamConfig {
		return natsJS.StreamConfig{Name: t, Subjects: []string{t}, MaxAge: maxAge, MaxMsgs: maxLen, Discard: natsJS.DiscardOld}
	}
	logger := wmLogger(log)
	p, err := jetstream.NewPublisher(jetstream.PublisherConfig{URL: url, Logger: logger, ConfigureStream: streamCfg})
	if err != nil {
		return nil, fmt.Errorf("nats bus publisher (%s, cluster.nats_url): %w", url, err)
	}
	s, err := jetstream.NewSubscriber(jetstream.SubscriberConfig{
		URL: url, Logger: logger, ConfigureStream: streamCfg,
		ConfigureConsumer: func(t, _ string) natsJS.ConsumerConfig {
			return natsJS.ConsumerConfig{AckPolicy: natsJS.AckExplicitPolicy, DeliverPolicy: natsJS.DeliverNewPolicy,
				InactiveThreshold: time.Minute}
		},
		AckAsync: true,
	})
	if err != nil {
		_ = p.Close()
		return nil, fmt.Errorf("nats bus subscriber (%s, cluster.nats_url): %w", url, err)
	}
	return &Bus{name: "nats", pub: p, sub: s, topic: topic}, nil
}

// NewGoChannelBus is the in-process bus of the embedded default (one
// process: nothing is ever published to another instance).
func NewGoChannelBus(log *slog.Logger) *Bus {
	// Publish waits for the subscriber's ack: without it every message goes
	// out on a goroutine of its own and order is lost.
	g := gochannel.NewGoChannel(gochannel.Config{OutputChannelBuffer: 1024, BlockPublishUntilSubscriberAck: true}, wmLogger(log))
	return &Bus{name: "gochannel", pub: g, sub: g, topic: func(id string) string { return "inbox:" + id }}
}

// wmLogger is watermill's logging through slog, its chatter (info:
// "subscribing", "closing") demoted to debug, and so are its errors that
// are only the bus closing (redisstream logs "read fail" with
// context.Canceled at error level on every Close).
func wmLogger(log *slog.Logger) watermill.LoggerAdapter {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	log = slog.New(closingIsDebug{log.Handler()})
	return watermill.NewSlogLoggerWithLevelMapping(log, map[slog.Level]slog.Level{slog.LevelInfo: slog.LevelDebug})
}

// closingIsDebug demotes records whose "error" is context.Canceled to
// debug.
type closingIsDebug struct{ slog.Handler }

func (h closingIsDebug) Handle(ctx context.Context, r slog.Record) error {
	if r.Level > slog.LevelDebug {
		canceled := false
		r.Attrs(func(a slog.Attr) bool {
			if err, ok := a.Value.Any().(error); ok && errors.Is(err, context.Canceled) {
				canceled = true
				return false
			}
			return true
		})
		if canceled {
			if !h.Handler.Enabled(ctx, slog.LevelDebug) {
				return nil
			}
			r.Level = slog.LevelDebug
		}
	}
	return h.Handler.Handle(ctx, r)
}

func (h closingIsDebug) WithAttrs(attrs []slog.Attr) slog.Handler {
	return closingIsDebug{h.Handler.WithAttrs(attrs)}
}

func (h closingIsDebug) WithGroup(name string) slog.Handler {
	return closingIsDebug{h.Handler.WithGroup(name)}
}
