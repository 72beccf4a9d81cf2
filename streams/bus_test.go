package streams

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/nexo-im/nexo/store/storetest"
)

// testBuses opens, per backend, a function giving each instance of a test
// its bus; the instances share the backend and a prefix of the test's.
func testBuses(t *testing.T) map[string]func(self string) *Bus {
	out := map[string]func(string) *Bus{}
	shared := NewGoChannelBus(nil)
	t.Cleanup(func() { _ = shared.Close() })
	out["gochannel"] = func(string) *Bus { return shared }
	var rdb *redis.Client
	var prefix string
	out["redis"] = func(self string) *Bus {
		if rdb == nil { // its keys (the inboxes) are deleted when the test ends
			rdb, prefix = storetest.Redis(t)
		}
		addr := rdb.Options().Addr
		pub, sub := redis.NewClient(&redis.Options{Addr: addr}), redis.NewClient(&redis.Options{Addr: addr})
		b, err := NewRedisBus(context.Background(), pub, sub, prefix, self, 1000, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = b.Close() })
		return b
	}
	natsPrefix := storetest.RandomName("bus")
	out["nats"] = func(string) *Bus {
		b, err := NewNATSBus(storetest.NATS(t), natsPrefix, time.Minute, 1000, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = b.Close() })
		return b
	}
	return out
}

// TestBusDeliversInPublishOrder, on every backend: what one instance
// publishes to another's inbox after that one subscribed arrives there
// once, in publish order, with every field; Receive ends with ctx.
func TestBusDeliversInPublishOrder(t *testing.T) {
	for name, open := range testBuses(t) {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			a, b := open("a"), open("b")
			in, err := b.Subscribe(ctx, "b")
			if err != nil {
				t.Fatal(err)
			}
			const n = 5
			published := make(chan struct{})
			go func() {
				defer close(published)
				for i := range n {
					e := BusEnvelope{Kind: "push", Users: []string{"u1", "u2"}, At: time.Now(), From: "a#1", Payload: fmt.Appendf(nil, "frame %d", i)}
					if err := a.Publish(ctx, "b", e); err != nil {
						t.Error(err)
					}
				}
			}()
			rctx, cancel := context.WithTimeout(ctx, 30*time.Second)
			defer cancel()
			for i := range n {
				d, ok := in.Receive(rctx)
				if !ok {
					t.Fatalf("envelope %d never arrived", i)
				}
				d.Ack()
				e := d.Envelope
				if string(e.Payload) != fmt.Sprintf("frame %d", i) || e.Kind != "push" || !slices.Equal(e.Users, []string{"u1", "u2"}) || e.From != "a#1" {
					t.Fatalf("envelope %d: %+v (%q)", i, e, e.Payload)
				}
			}
			done, stop := context.WithCancel(ctx)
			stop()
			if _, ok := in.Receive(done); ok {
				t.Fatal("Receive on a cancelled context returned an envelope")
			}
			// The last Publish may return after its envelope arrived: wait,
			// so its error is not reported after the test (a panic).
			<-published
		})
	}
}

// TestWatermillClosingErrorsAreDebug: watermill's error lines that only say
// the bus is closing (context.Canceled) are debug, other errors stay
// errors (redisstream logs "read fail" at error level on every Close).
func TestWatermillClosingErrorsAreDebug(t *testing.T) {
	var buf strings.Builder
	log := wmLogger(slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelInfo})))
	log.Error("read fail", fmt.Errorf("xreadgroup: %w", context.Canceled), nil)
	if buf.Len() != 0 {
		t.Fatalf("a closing error was logged above debug: %s", buf.String())
	}
	log.Error("read fail", errors.New("connection refused"), nil)
	if !strings.Contains(buf.String(), "level=ERROR") {
		t.Fatalf("a real error was not logged as one: %q", buf.String())
	}
}
