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
		{"single with pictures", "", func(o *options) { o.Pairs, o.Rate, o.PictureShare = 3, 100, 0.2 }},
		{"single with actions", "", func(o *options) { o.Pairs, o.Rate, o.ActionShare = 3, 100, 0.2 }},
		{"single closed loop with pictures and actions", "", func(o *options) {
			o.Pairs, o.Rate, o.Inflight, o.Await, o.PictureShare, o.ActionShare = 2, 0, 2, ackSaved, 0.1, 0.1
		}},
		{"group with pictures and actions", "", func(o *options) {
			o.Scenario, o.Groups, o.Members, o.Rate, o.PictureShare, o.ActionShare = "group", 2, 4, 100, 0.1, 0.1
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
			assertMix(t, &o, &res)
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
		if d := float64(c.Measured+c.ActionsMeasured) - want; d < -float64(r.Params.Senders) || d > float64(r.Params.Senders) {
			t.Errorf("measured %d messages, want %.0f ± %d", c.Measured, want, r.Params.Senders)
		}
	}
	if rc := r.Reconnect; rc != nil && (rc.Dropped == 0 || rc.Reconnected != rc.Dropped || rc.Incomplete != 0) {
		t.Errorf("reconnect %+v", rc)
	}
}

// assertMix checks the chat mix was sent and checked: pictures about
// their share of messages, each shown to its receivers with its object;
// actions of every kind, each answered and its notice shown once on every
// member connection.
func assertMix(t *testing.T, o *options, r *Result) {
	t.Helper()
	c, k := r.Counts, r.Correctness
	if o.PictureShare > 0 {
		if c.Pictures < int64(float64(c.Messages)*o.PictureShare)-int64(r.Params.Senders) || c.Pictures == 0 {
			t.Errorf("pictures %d of %d messages, want about %.0f%%", c.Pictures, c.Messages, o.PictureShare*100)
		}
		// Every receiver of a picture was shown it with its object.
		if c.PicturesReceived == 0 || k.PictureMismatches != 0 {
			t.Errorf("pictures shown with their object %d, mismatched %d", c.PicturesReceived, k.PictureMismatches)
		}
	}
	if o.ActionShare > 0 {
		if c.Edits == 0 || c.Reactions == 0 || c.Deletes == 0 || c.ActionsAnswered != c.ActionsSent {
			t.Errorf("actions sent %d (edits %d, reactions %d, deletes %d), answered %d",
				c.ActionsSent, c.Edits, c.Reactions, c.Deletes, c.ActionsAnswered)
		}
		if c.NoticesExpected == 0 || c.NoticesReceived != c.NoticesExpected || k.NoticesMissing != 0 || k.NoticesDuplicate != 0 {
			t.Errorf("notices %d of %d, missing %d, duplicate %d", c.NoticesReceived, c.NoticesExpected, k.NoticesMissing, k.NoticesDuplicate)
		}
		// Every notice's 2101 to its actor is recognised, not a stray frame.
		if k.Stray != 0 || k.NoticesSavedAcks == 0 {
			t.Errorf("stray frames %d, notices' saved ACKs %d", k.Stray, k.NoticesSavedAcks)
		}
		if r.Latency.ActionAnswer.Count != c.ActionsMeasured || r.Latency.ActionAnswer.Count == 0 {
			t.Errorf("action answer histogram %d values, want %d", r.Latency.ActionAnswer.Count, c.ActionsMeasured)
		}
	}
}

// TestSelfMixByPull runs the chat mix in groups whose members are
// notified (2102) and pull instead of being pushed: pictures and action
// notices read by pull count like pushed ones, exactly once each.
func TestSelfMixByPull(t *testing.T) {
	dsn := storetest.MySQLDSN(t)
	_, _ = storetest.Redis(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	srv, err := startInProcess(ctx, serverOptions{MySQLDSN: dsn, RedisAddr: storetest.RedisAddr(t),
		Env: []string{"NEXO_GROUP_PUSH_MODE=notify"}}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	var o options
	o.register(flag.NewFlagSet("", flag.ContinueOnError))
	o.URL, o.Quiet, o.Duration, o.Warmup, o.Grace = srv.URL(), true, time.Second, 200*time.Millisecond, 10*time.Second
	o.Scenario, o.Groups, o.Members, o.Rate, o.PictureShare, o.ActionShare = "group", 2, 4, 100, 0.2, 0.2
	if err := o.check(); err != nil {
		t.Fatal(err)
	}
	sess, err := newSession(ctx, &o, o.URL, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	defer sess.close()
	res, err := sess.runMessages(ctx, "group mix by pull")
	if err != nil {
		t.Fatal(err)
	}
	assertHealthy(t, &res)
	assertMix(t, &o, &res)
	if c := res.Counts; c.DeliveredByPull != c.Delivered {
		t.Errorf("%d of %d deliveries by pull: the server pushed message bodies", c.DeliveredByPull, c.Delivered)
	}
}
