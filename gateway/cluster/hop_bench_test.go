package cluster

import (
	"context"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/nexo-im/nexo/gateway/ws"
	"github.com/nexo-im/nexo/store"
)

// BenchmarkCrossInstanceHop is what routing a push to another instance
// adds, alone: instance a pushes to a user held by b (the outbox, one
// presence answer from memory, the bus, b's inbox, b's local push), one
// push at a time, timed from PushToUsers to b's local connection having
// it; p50/p99 in µs (the target: a cross-instance push adds at most
// 1 ms p99), on the default bus (Redis Streams); run:
//
//	go test -run '^$' -bench CrossInstanceHop -benchtime 2000x ./gateway/cluster
func BenchmarkCrossInstanceHop(b *testing.B) {
	for name, open := range busBackends(b) {
		if name != "redis" {
			// gochannel is one process; the NATS bus keeps its streams
			// per test name, which a benchmark's repeated runs reuse.
			continue
		}
		b.Run(name, func(b *testing.B) {
			ctx := context.Background()
			a, bb := &store.Instance{ID: "a", Epoch: 1}, &store.Instance{ID: "b", Epoch: 2}
			live := []store.Instance{*a, *bb}
			presence := fakePresence{"u1": {"b#2"}}
			localA, localB := newFakeLocal(), newFakeLocal("u1")
			mk := func(self *store.Instance, l *fakeLocal) *Relay {
				return startRelay(b, Deps{Local: l, Presence: presence, Membership: &fakeMembership{self: *self, live: live},
					Bus: open(b, self.ID), MaxAge: time.Minute})
			}
			ra := mk(a, localA)
			mk(bb, localB)
			lat := make([]time.Duration, 0, b.N)
			b.ResetTimer()
			for i := range b.N {
				f := ws.FrameFromBytes([]byte(`{"req_identifier":2001,"data":{"seq":` + strconv.Itoa(i) + `}}`))
				start := time.Now()
				ra.PushToUsers(ctx, []string{"u1"}, f, "")
				localB.wait(b, "the push on b", func() bool { return len(localB.got["u1"]) == i+1 })
				lat = append(lat, time.Since(start))
			}
			b.StopTimer()
			slices.Sort(lat)
			b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50_us")
			b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99_us")
		})
	}
}
