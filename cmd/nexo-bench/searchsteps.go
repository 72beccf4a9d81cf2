package main

import (
	"context"
	"fmt"
	"time"
)

// The search steps measure what message search costs and promises
// (docs/search.md): a saved message is searchable within a second at
// 1,000 msg/s (p99), and the save path with search on holds at least 0.9×
// the persisted throughput of search off.
const (
	searchableTarget = time.Second
	searchCostTarget = 0.9
)

// searchable runs single chat, 50 pairs at 1,000 msg/s on the suite's
// server (search on), one message in 50 a search probe, and checks the
// probes' p99 against searchableTarget.
func (s *suite) searchable(ctx context.Context, name string) (SuiteEntry, error) {
	o := s.base()
	o.Pairs, o.Rate, o.SearchProbe, o.Duration = 50, 1000, 50, s.scaled(10*time.Second)
	o.Label = name
	if s.quick {
		o.Rate /= 5
	}
	jsonPath, htmlPath, e := s.files(name)
	e.Kind = "run"
	sess, err := newSession(ctx, &o, o.URL, s.log)
	if err != nil {
		return e, err
	}
	defer sess.close()
	if sess.mode, err = s.srv.SetMode(""); err != nil {
		return e, err
	}
	res, err := sess.runMessages(ctx, name)
	if err != nil {
		return e, err
	}
	p99 := res.Latency.Searchable.P99
	met := res.Counts.SearchProbes > 0 && res.Counts.SearchMisses == 0 && p99 <= float64(searchableTarget.Milliseconds())
	res.Notes = append(res.Notes, fmt.Sprintf("target: searchable within %s of ACK(saved), p99: %.0f ms over %d probes, %d not found %s",
		searchableTarget, p99, res.Counts.SearchProbes, res.Counts.SearchMisses, metMark(met)))
	writeTable(s.stdout, &res)
	e.OK = res.OK && met
	return e, writeOutputs(jsonPath, htmlPath, &res, name, tableText(&res), resultCharts(&res))
}

// searchCost compares persisted throughput with search on (the suite's
// server, A) and off (a second server, B): closedSavedCompare; the target
// is A/B ≥ searchCostTarget.
func (s *suite) searchCost(ctx context.Context, name string) (SuiteEntry, error) {
	c, e, err := s.closedSavedCompare(ctx, name, []string{"NEXO_SEARCH_ENABLED=false"}, "search on (the default)", "search off")
	if err != nil {
		return e, err
	}
	ratio := 0.0
	if off := c.B.Median["saved_per_s"]; off > 0 {
		ratio = c.A.Median["saved_per_s"] / off
	}
	fmt.Fprintf(s.stdout, "   target: saved msg/s with search on ≥ %.2f× off: %.3f %s\n", searchCostTarget, ratio, atLeast(ratio, searchCostTarget))
	return s.finishCompare(c, e, name, ratio >= searchCostTarget)
}

// closedSavedCompare runs 50 pairs, closed loop, one message in flight per
// sender until its ACK(saved), 10 s after 2 s, 3 alternating runs each (1
// with --quick): A on the suite's server, B on a second in-process server
// on the same database and Redis with envB. modeA and modeB name the sides
// in the report, which it prints.
func (s *suite) closedSavedCompare(ctx context.Context, name string, envB []string, modeA, modeB string) (*CompareResult, SuiteEntry, error) {
	_, _, e := s.files(name)
	e.Kind = "compare"
	so := s.so
	so.FreshDB = false // the suite's server uses the database already
	so.Env = envB
	other, err := startInProcess(ctx, so, s.log)
	if err != nil {
		return nil, e, fmt.Errorf("start the server with %s: %w", modeB, err)
	}
	defer other.Close()
	o := s.base()
	o.Label, o.Pairs, o.Rate, o.Inflight, o.Await, o.Repeat = name, 50, 0, 1, ackSaved, 3
	o.Warmup, o.Duration = 2*time.Second, s.scaled(10*time.Second)
	if s.quick {
		o.Repeat = 1
	}
	a, err := newSession(ctx, &o, s.srv.URL(), s.log)
	if err != nil {
		return nil, e, err
	}
	defer a.close()
	ob := o
	b, err := newSession(ctx, &ob, other.URL(), s.log)
	if err != nil {
		return nil, e, err
	}
	defer b.close()
	c, err := runCompare(ctx, s.log, &o, a, b, "", modeB, nil)
	if err != nil {
		return nil, e, err
	}
	c.A.Mode, c.B.Mode = modeA, modeB
	writeCompare(s.stdout, c)
	return c, e, nil
}

// finishCompare writes c's files; the step is OK when both sides had no
// correctness failure and its target was met.
func (s *suite) finishCompare(c *CompareResult, e SuiteEntry, name string, met bool) (SuiteEntry, error) {
	jsonPath, htmlPath, _ := s.files(name)
	e.OK = c.A.Median["failures"]+c.B.Median["failures"] == 0 && met
	return e, writeOutputs(jsonPath, htmlPath, c, name, compareText(c), compareChart(c))
}

// metMark marks a target met or missed.
func metMark(met bool) string {
	if met {
		return "✓"
	}
	return "✗"
}
