package main

import (
	"context"
	"fmt"

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
	priv, pub, err := webpush.GenerateVAPIDKeys()
	if err != nil {
		return SuiteEntry{}, fmt.Errorf("VAPID keys: %w", err)
	}
	env := []string{"NEXO_PUSH_ENABLED=true", "NEXO_PUSH_WEBPUSH_VAPID_PUBLIC_KEY=" + pub, "NEXO_PUSH_WEBPUSH_VAPID_PRIVATE_KEY=" + priv}
	c, e, err := s.closedSavedCompare(ctx, name, env,
		"built-in push off (no provider)", "built-in push on (Web Push configured; recipients online)")
	if err != nil {
		return e, err
	}
	ratio := c.Ratios["saved_per_s"]
	fmt.Fprintf(s.stdout, "   target: saved msg/s with push on ≥ %.2f× off: %.3f %s\n", pushCostTarget, ratio, atLeast(ratio, pushCostTarget))
	return s.finishCompare(c, e, name, ratio >= pushCostTarget)
}
