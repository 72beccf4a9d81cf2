package main

import (
	"context"
	"flag"
	"io"
	"testing"
	"time"

	"github.com/nexo-im/nexo/store/storetest"
)

// TestSelf runs short scenarios against Nexo started in this process on
// the test MariaDB and Redis, and asserts what a healthy server must give:
// zero lost, duplicated or reordered messages, no errors, and histograms
// holding exactly one value per measured message (per delivery for the
// delivery histogram). Under CI=true unreachable backends fail the test.
func TestSelf(t *testing.T) {
	dsn := storetest.MySQLDSN(t)
	_, _ = storetest.Redis(t) // skips (or fails under CI) when Redis is unreachable
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	srv, err := startInProcess(ctx, serverOptions{MySQLDSN: dsn, RedisAddr: storetest.RedisAddr(t)}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })

	cases := []struct {
		name string
		mode string
		set  func(o *options)
	}{
		{"single open loop", "", func(o *options) { o.Pairs, o.Rate = 4, 200 }},
		{"single closed loop until saved", "", func(o *options) { o.Pairs, o.Rate, o.Inflight, o.Await = 3, 0, 2, ackSaved }},
		{"single two-phase off", "two_phase.enabled=false", func(o *options) { o.Pairs, o.Rate = 3, 100 }},
		{"single with search probes", "", func(o *options) { o.Pairs, o.Rate, o.SearchProbe = 3, 100, 10 }},
		{"group", "", func(o *options) { o.Scenario, o.Groups, o.Members, o.Rate = "group", 2, 4, 100 }},
		{"group, part online", "", func(o *options) {
			o.Scenario, o.Groups, o.Members, o.OnlineShare, o.Rate = "group", 1, 6, 0.5, 100
		}},
		{"reconnect", "", func(o *options) {
			o.Scenario, o.Pairs, o.Rate, o.Duration, o.Offline = "reconnect", 2, 100, 1500*time.Millisecond, 300*time.Millisecond
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var o options
			o.register(flag.NewFlagSet("", flag.ContinueOnError))
			o.URL, o.Quiet, o.Duration, o.Warmup, o.Grace = srv.URL(), true, time.Second, 200*time.Millisecond, 10*time.Second
			tc.set(&o)
			if err := o.check(); err != nil {
				t.Fatal(err)
			}
			sess, err := newSession(ctx, &o, o.URL, io.Discard)
			if err != nil {
				t.Fatal(err)
			}
			defer sess.close()
			if sess.mode, err = srv.SetMode(tc.mode); err != nil {
				t.Fatal(err)
			}
			defer srv.SetMode("")
			res, err := sess.runMessages(ctx, tc.name)
			if err != nil {
				t.Fatal(err)
			}
			assertHealthy(t, &res)
			if o.SearchProbe > 0 {
				c := res.Counts
				// One message in ten is a probe; the measured ones are in the histogram.
				if c.SearchProbes < c.Messages/10 || c.SearchMisses != 0 || res.Latency.Searchable.Count == 0 ||
					res.Latency.Searchable.Count > c.SearchProbes {
					t.Errorf("search probes %d of %d messages, %d not found, %d in the histogram",
						c.SearchProbes, c.Messages, c.SearchMisses, res.Latency.Searchable.Count)
				}
			}
		})
	}
}

func assertHealthy(t *testing.T, r *Result) {
	t.Helper()
	c, k, l := r.Counts, r.Correctness, r.Latency
	if !r.OK || k.failures() != 0 || len(r.Errors) != 0 {
		t.Errorf("not healthy: correctness %+v, errors %v", k, r.Errors)
	}
	if c.Messages == 0 || c.Measured == 0 {
		t.Fatalf("nothing sent: %+v", c)
	}
	if c.Accepted != c.Messages || c.Saved != c.Messages {
		t.Errorf("messages %d, accepted %d, saved %d: want all", c.Messages, c.Accepted, c.Saved)
	}
	if got := c.Delivered + c.Recovered; got != c.ExpectedDeliveries {
		t.Errorf("deliveries %d (recovered %d), want %d", c.Delivered, c.Recovered, c.ExpectedDeliveries)
	}
	for _, h := range []struct {
		name string
		got  int64
		want int64
	}{
		{"accepted", l.Accepted.Count, c.Measured},
		{"saved", l.Saved.Count, c.Measured},
		{"accepted_to_saved", l.Lag.Count, c.Measured},
		{"send_delay", l.SendDelay.Count, c.Measured},
		{"delivery + gap fill", l.Delivery.Count + l.Recovery.Count, c.MeasuredExpected},
	} {
		if h.got != h.want {
			t.Errorf("histogram %s holds %d values, want %d", h.name, h.got, h.want)
		}
	}
	if r.Params.Loop == "open" {
		// Every sender's k-th message is due at a fixed time: the measured
		// window holds rate × duration of them, give or take one per sender.
		want := r.Params.Rate * r.Params.DurationS
		if d := float64(c.Measured) - want; d < -float64(r.Params.Senders) || d > float64(r.Params.Senders) {
			t.Errorf("measured %d messages, want %.0f ± %d", c.Measured, want, r.Params.Senders)
		}
	}
	if rc := r.Reconnect; rc != nil && (rc.Dropped == 0 || rc.Reconnected != rc.Dropped || rc.Incomplete != 0) {
		t.Errorf("reconnect %+v", rc)
	}
}
