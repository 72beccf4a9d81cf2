package main

import (
	"context"
	"flag"
	"io"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/nexo-im/nexo/store/storetest"
)

// BenchmarkSingleChat is the pipeline's go test -bench scenario (issue 4):
// single chat at a fixed rate against Nexo started in this process on the
// test MariaDB and Redis, two-phase on and off measured side by side in one
// run, alternating round by round. It reports accepted latency (the send's
// first ACK) and accepted→saved lag at p50/p99 in ms, and persisted
// messages per second. Latency counts from each message's scheduled send
// time, so a slow server cannot hide it. Run it as
//
//	go test -run '^$' -bench SingleChat -benchtime 3x ./cmd/nexo-bench
//
// with BENCH_RATE (msg/s, default 5000) and BENCH_SECONDS
// (measured seconds per round, default 5). Figures: docs/bench/README.md.
func BenchmarkSingleChat(b *testing.B) {
	rate := envFloat("BENCH_RATE", 5000)
	seconds := envFloat("BENCH_SECONDS", 5)
	dsn := storetest.MySQLDSN(b)
	_, _ = storetest.Redis(b)
	ctx := context.Background()
	srv, err := startInProcess(ctx, serverOptions{MySQLDSN: dsn, RedisAddr: storetest.RedisAddr(b)}, io.Discard)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = srv.Close() })

	modes := []struct{ name, mode string }{{"two_phase_on", ""}, {"two_phase_off", "two_phase.enabled=false"}}
	results := make(map[string][]Result)
	for round := 0; round < max(b.N, 1); round++ {
		for _, m := range modes {
			var o options
			o.register(flag.NewFlagSet("", flag.ContinueOnError))
			o.URL, o.Quiet, o.Pairs, o.Rate = srv.URL(), true, 50, rate
			o.Duration, o.Warmup, o.Grace = time.Duration(seconds*float64(time.Second)), time.Second, 10*time.Second
			if err := o.check(); err != nil {
				b.Fatal(err)
			}
			sess, err := newSession(ctx, &o, o.URL, io.Discard)
			if err != nil {
				b.Fatal(err)
			}
			if sess.mode, err = srv.SetMode(m.mode); err != nil {
				b.Fatal(err)
			}
			res, err := sess.runMessages(ctx, m.name)
			sess.close()
			if err != nil {
				b.Fatal(err)
			}
			if !res.OK {
				b.Errorf("%s: correctness %+v errors %v", m.name, res.Correctness, res.Errors)
			}
			results[m.name] = append(results[m.name], res)
		}
	}
	_, _ = srv.SetMode("")
	for _, m := range modes {
		rs := results[m.name]
		median := func(f func(r *Result) float64) float64 {
			vals := make([]float64, len(rs))
			for i := range rs {
				vals[i] = f(&rs[i])
			}
			return median(vals)
		}
		prefix := m.name + "_"
		b.ReportMetric(median(func(r *Result) float64 { return r.Latency.Accepted.P50 }), prefix+"ack_p50_ms")
		b.ReportMetric(median(func(r *Result) float64 { return r.Latency.Accepted.P99 }), prefix+"ack_p99_ms")
		b.ReportMetric(median(func(r *Result) float64 { return r.Latency.Lag.P50 }), prefix+"lag_p50_ms")
		b.ReportMetric(median(func(r *Result) float64 { return r.Latency.Lag.P99 }), prefix+"lag_p99_ms")
		b.ReportMetric(median(func(r *Result) float64 { return r.Throughput.Saved }), prefix+"saved_msgs/s")
	}
}

func envFloat(name string, def float64) float64 {
	if v, err := strconv.ParseFloat(os.Getenv(name), 64); err == nil && v > 0 {
		return v
	}
	return def
}
