package main

import (
	"context"
	"sort"
	"testing"
	"time"
)

// TestPacerSleeps: a sleep never ends early, and cancelling the context
// ends a sleep in progress and every later one, for the platform's pacer
// and the portable one.
func TestPacerSleeps(t *testing.T) {
	for name, mk := range map[string]func(context.Context) pacer{
		"platform": newPacer,
		"timer":    func(ctx context.Context) pacer { return newTimerPacer(ctx) },
	} {
		t.Run(name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			p := mk(ctx)
			defer p.close()
			for _, d := range []time.Duration{time.Microsecond, 3 * time.Millisecond} {
				start := time.Now()
				if !p.sleep(d) {
					t.Fatalf("sleep(%v) reported cancellation", d)
				}
				if took := time.Since(start); took < d {
					t.Fatalf("sleep(%v) returned after %v", d, took)
				}
			}
			done := make(chan bool)
			go func() { done <- p.sleep(time.Hour) }()
			cancel()
			select {
			case ok := <-done:
				if ok {
					t.Fatal("a cancelled sleep reported a full sleep")
				}
			case <-time.After(10 * time.Second):
				t.Fatal("cancelling the context did not end the sleep")
			}
			if p.sleep(time.Millisecond) {
				t.Fatal("a sleep after cancellation reported a full sleep")
			}
		})
	}
}

// BenchmarkPacerLateness reports how late a 2 ms sleep ends (p50 and p99,
// in µs) with the platform's pacer and with a time.Timer: the generator's
// own share of every open-loop latency (docs/bench/README.md).
func BenchmarkPacerLateness(b *testing.B) {
	for name, mk := range map[string]func(context.Context) pacer{
		"platform": newPacer,
		"timer":    func(ctx context.Context) pacer { return newTimerPacer(ctx) },
	} {
		b.Run(name, func(b *testing.B) {
			p := mk(context.Background())
			defer p.close()
			late := make([]time.Duration, 0, b.N)
			for i := 0; i < b.N; i++ {
				d := 2*time.Millisecond + time.Duration(i%7)*137*time.Microsecond
				due := time.Now().Add(d)
				p.sleep(d)
				late = append(late, time.Since(due))
			}
			sort.Slice(late, func(i, j int) bool { return late[i] < late[j] })
			b.ReportMetric(float64(late[len(late)/2].Microseconds()), "p50-late-us")
			b.ReportMetric(float64(late[len(late)*99/100].Microseconds()), "p99-late-us")
		})
	}
}
