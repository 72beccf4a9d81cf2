package main

import (
	"context"
	"fmt"
	"strings"
	"time"
)

// The baseline-* steps hold a candidate build to the light-load, group
// fan-out and memory targets, side by side with a baseline build in the
// same run (docs/bench/README.md, "Against a baseline build"): A is the
// deployment at --baseline-url, B the one at --candidate-url (default: the
// suite's in-process server). Both are measured from outside, through the
// public protocol and their /metrics (process_cpu_seconds_total,
// process_resident_memory_bytes; NEXO_METRICS_TOKEN), runs alternating.

// baselineSteps returns the steps, or none without a baseline.
func (s *suite) baselineSteps() []suiteStep {
	if s.baselineURL == "" {
		return nil
	}
	return []suiteStep{
		{"baseline-50x10", "50 pairs × 10 msg/s (500 msg/s), 20 s: baseline (A) vs candidate (B), 3 runs each",
			func(ctx context.Context) (SuiteEntry, error) {
				o := s.base()
				o.Pairs, o.Rate, o.Duration = 50, 500, s.scaled(20*time.Second)
				return s.vsBaseline(ctx, "baseline-50x10", &o, lightLoadGoals)
			}},
		{"baseline-group", "10 groups × 11 members, 300 msg/s (3,000 deliveries/s), 10 s: baseline (A) vs candidate (B), 3 runs each",
			func(ctx context.Context) (SuiteEntry, error) {
				o := s.base()
				o.Scenario, o.Groups, o.Members, o.Rate, o.Duration = "group", 10, 11, 300, s.scaled(10*time.Second)
				return s.vsBaseline(ctx, "baseline-group", &o, groupGoals)
			}},
		{"baseline-group-closed", "10 groups × 11 members, closed loop, 10 s: baseline (A) vs candidate (B), 3 runs each",
			func(ctx context.Context) (SuiteEntry, error) {
				o := s.base()
				o.Scenario, o.Groups, o.Members, o.Rate, o.Inflight, o.Duration = "group", 10, 11, 0, 1, s.scaled(10*time.Second)
				return s.vsBaseline(ctx, "baseline-group-closed", &o, groupClosedGoals)
			}},
		{"baseline-closed-50", "50 pairs, closed loop until the first ACK, 10 s: baseline (A) vs candidate (B), 3 runs each; server RSS",
			func(ctx context.Context) (SuiteEntry, error) {
				o := s.base()
				o.Pairs, o.Rate, o.Inflight, o.Duration = 50, 0, 1, s.scaled(10*time.Second)
				return s.vsBaseline(ctx, "baseline-closed-50", &o, memoryGoals)
			}},
	}
}

// vsBaseline runs o on the baseline (A) and the candidate (B),
// alternating, and checks the comparison against goals.
func (s *suite) vsBaseline(ctx context.Context, name string, o *options, goals func(*CompareResult) []Goal) (SuiteEntry, error) {
	o.Label = name
	if s.quick {
		o.Rate, o.Repeat = o.Rate/5, 1
	}
	jsonPath, htmlPath, e := s.files(name)
	e.Kind = "compare"
	candidate := s.candidateURL
	if candidate == "" {
		candidate = s.srv.URL()
	}
	a, err := newSession(ctx, o, s.baselineURL, s.log)
	if err != nil {
		return e, err
	}
	defer a.close()
	b, err := newSession(ctx, o, candidate, s.log)
	if err != nil {
		return e, err
	}
	defer b.close()
	c, err := runCompare(ctx, s.log, o, a, b, "", "", nil)
	if err != nil {
		return e, err
	}
	c.A.Mode, c.B.Mode = "baseline", "candidate"
	c.Targets = goals(c)
	writeCompare(s.stdout, c)
	e.OK = c.A.Median["failures"]+c.B.Median["failures"] == 0
	return e, writeOutputs(jsonPath, htmlPath, c, name, compareText(c), compareChart(c))
}

// ratioGoal: B's median of key at most (or, atLeast, at least) limit × A's.
func ratioGoal(c *CompareResult, name, key string, limit float64, atLeast bool) Goal {
	r, ok := c.Ratios[key]
	g := Goal{Name: name, Want: fmt.Sprintf("B/A ≤ %.2f", limit)}
	if atLeast {
		g.Want = fmt.Sprintf("B/A ≥ %.2f", limit)
	}
	if !ok {
		g.Got = "not measured (A reported 0: a server without /metrics CPU?)"
		return g
	}
	g.Got = fmt.Sprintf("%.2f (A %.3f, B %.3f)", r, c.A.Median[key], c.B.Median[key])
	g.Met = r <= limit
	if atLeast {
		g.Met = r >= limit
	}
	return g
}

func zeroFailures(c *CompareResult) Goal {
	a, b := c.A.Median["failures"], c.B.Median["failures"]
	// Every run, not the median: one failing run fails the goal.
	for _, side := range []*CompareSide{&c.A, &c.B} {
		for i := range side.Runs {
			if n := float64(side.Runs[i].Correctness.failures() + sumErrors(side.Runs[i].Errors)); n > 0 {
				a = max(a, n)
			}
		}
	}
	return Goal{Name: "every correctness counter zero in every run", Want: "0", Got: fmt.Sprintf("%.0f", max(a, b)), Met: max(a, b) == 0}
}

func lightLoadGoals(c *CompareResult) []Goal {
	return []Goal{
		ratioGoal(c, "server + Redis + MariaDB CPU per message", "cpu_ms_per_msg", 0.65, false),
		ratioGoal(c, "ACK p99 not above the baseline's", "accepted_p99_ms", 1.0, false),
		ratioGoal(c, "delivery p99 (deliver after save)", "delivery_p99_ms", 0.5, false),
		zeroFailures(c),
	}
}

func groupGoals(c *CompareResult) []Goal {
	return []Goal{
		ratioGoal(c, "server + Redis + MariaDB CPU per delivery", "cpu_ms_per_delivery", 0.55, false),
		zeroFailures(c),
	}
}

func groupClosedGoals(c *CompareResult) []Goal {
	return []Goal{
		ratioGoal(c, "closed-loop deliveries/s", "delivered_per_s", 1.8, true),
		zeroFailures(c),
	}
}

func memoryGoals(c *CompareResult) []Goal {
	rss := c.B.Median["server_rss_mb"]
	g := Goal{Name: "candidate's server RSS in the 50-pair closed loop", Want: "≤ 100 MB", Got: fmt.Sprintf("%.1f MB (baseline %.1f MB)", rss, c.A.Median["server_rss_mb"]), Met: rss > 0 && rss <= 100}
	if rss == 0 {
		g.Got = "not measured (no process_resident_memory_bytes)"
	}
	return []Goal{g, zeroFailures(c)}
}

// goalsMarkdown is results.md's table of the baseline-* steps' targets,
// each with its figure and ✓ or ✗ ("" when no such step ran).
func (l *loaded) goalsMarkdown() string {
	var b strings.Builder
	for _, e := range l.index.Entries {
		c := l.compares[e.Name]
		if c == nil || e.Error != "" || len(c.Targets) == 0 {
			continue
		}
		if b.Len() == 0 {
			b.WriteString("## Against a baseline build\n\nA = the baseline deployment, B = the candidate, alternating runs, medians (docs/bench/README.md, \"Against a baseline build\").\n\n| step | target | wanted | measured | met |\n|---|---|---|---|:-:|\n")
		}
		for _, g := range c.Targets {
			mark := "✗"
			if g.Met {
				mark = "✓"
			}
			fmt.Fprintf(&b, "| [%s](%s) | %s | %s | %s | %s |\n", e.Name, e.File, g.Name, g.Want, g.Got, mark)
		}
	}
	if b.Len() > 0 {
		b.WriteString("\n")
	}
	return b.String()
}
