package main

import "testing"

// Only the two-phase on/off comparisons say what two-phase off sustains:
// the B side of webhooks-5k (webhooks on, two-phase on) meeting the
// criterion at 5,000 msg/s must not be reported as two-phase off doing so.
func TestSustainedInComparesCountsOnlyOnOff(t *testing.T) {
	side := func(rate, saved float64) CompareSide {
		return CompareSide{Median: map[string]float64{"saved_per_s": saved, "saved_p99_ms": 50, "failures": 0},
			Runs: []Result{{Params: Params{Rate: rate}}}}
	}
	l := &loaded{compares: map[string]*CompareResult{
		"single-1k":   {A: side(1000, 1000), B: side(1000, 1000)},
		"single-5k":   {A: side(5000, 5000), B: side(5000, 1200)},
		"webhooks-5k": {A: side(5000, 5000), B: side(5000, 5000)},
	}}
	on, off := l.sustainedInCompares()
	if on != 5000 || off != 1000 {
		t.Fatalf("sustained on %v, off %v; want 5000 and 1000", on, off)
	}
}
