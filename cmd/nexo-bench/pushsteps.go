package main

import (
	"context"
	"fmt"
	"time"

	webpush "github.com/SherClockHolmes/webpush-go"
)

// pushCostTarget: the built-in push must not slow the save and deliver
// stages: persisted throughput with it on ≥ 0.95× off (docs/push.md).
const pushCostTarget = 0.95

// pushCost compares persisted throughput without built-in push (the
// suite's server, A: no provider configured, so no push stage runs) and
// with it (a second server, B, with Web Push configured: every saved
// message goes through the push stream and its resolve stage, which finds
// the recipient online and sends nothing, as for a chat in the
// foreground): 50 pairs, closed loop until ACK(saved), 3 alternating runs
// each; the target is B/A ≥ pushCostTarget.
func (s *suite) pushCost(ctx context.Context, name string) (SuiteEntry, error) {
	jsonPath, htmlPath, e := s.files(name)
	e.Kind = "compare"
	priv, pub, err := webpush.GenerateVAPIDKeys()
	if err != nil {
		return e, fmt.Errorf("VAPID keys: %w", err)
	}
	so := s.so
	so.FreshDB = false // the suite's server uses the database already
	so.Env = []string{"NEXO_PUSH_ENABLED=true", "NEXO_PUSH_WEBPUSH_VAPID_PUBLIC_KEY=" + pub, "NEXO_PUSH_WEBPUSH_VAPID_PRIVATE_KEY=" + priv}
	on, err := startInProcess(ctx, so, s.log)
	if err != nil {
		return e, fmt.Errorf("start the server with push on: %w", err)
	}
	defer on.Close()
	o := s.base()
	o.Label, o.Pairs, o.Rate, o.Inflight, o.Await, o.Repeat = name, 50, 0, 1, ackSaved, 3
	o.Warmup, o.Duration = 2*time.Second, s.scaled(10*time.Second)
	if s.quick {
		o.Repeat = 1
	}
	a, err := newSession(ctx, &o, s.srv.URL(), s.log)
	if err != nil {
		return e, err
	}
	defer a.close()
	ob := o
	b, err := newSession(ctx, &ob, on.URL(), s.log)
	if err != nil {
		return e, err
	}
	defer b.close()
	c, err := runCompare(ctx, s.log, &o, a, b, "", "push on (Web Push)", nil)
	if err != nil {
		return e, err
	}
	c.A.Mode, c.B.Mode = "built-in push off (no provider)", "built-in push on (Web Push configured; recipients online)"
	writeCompare(s.stdout, c)
	ratio := c.Ratios["saved_per_s"]
	fmt.Fprintf(s.stdout, "   target: saved msg/s with push on ≥ %.2f× off: %.3f %s\n", pushCostTarget, ratio, atLeast(ratio, pushCostTarget))
	e.OK = c.A.Median["failures"]+c.B.Median["failures"] == 0 && ratio >= pushCostTarget
	return e, writeOutputs(jsonPath, htmlPath, c, name, compareText(c), compareChart(c))
}
