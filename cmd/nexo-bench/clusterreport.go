package main

import (
	"bytes"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/go-echarts/go-echarts/v2/charts"
	"github.com/go-echarts/go-echarts/v2/components"
	"github.com/go-echarts/go-echarts/v2/opts"
)

// ClusterResult is the cluster step's JSON (suite kind "cluster");
// docs/bench/cluster.md explains every part.
type ClusterResult struct {
	Tool      string `json:"tool"`
	Schema    int    `json:"schema"`
	Name      string `json:"name"`
	Instances int    `json:"instances"`
	Bus       string `json:"bus"`
	Shards    int    `json:"shards"`

	// CPU is one run per cluster size, 1 to Instances.
	CPU []ClusterCPU `json:"cpu"`
	// Latency compares local (A) and cross-instance (B) placements.
	Latency *CompareResult `json:"cross_vs_local"`
	// CrossMinusLocalP99 is B's median delivery p99 minus A's, in ms.
	CrossMinusLocalP99 float64             `json:"cross_minus_local_delivery_p99_ms"`
	Completeness       ClusterCompleteness `json:"completeness"`
	Propagation        Propagation         `json:"propagation"`
	OK                 bool                `json:"ok"`
}

// ClusterCPU is the cost of one run at a cluster size. The process CPU
// includes the load generator and the suite's own idle server.
type ClusterCPU struct {
	Instances    int     `json:"instances"`
	Offered      float64 `json:"offered_per_s"`
	SavedPerS    float64 `json:"saved_per_s"`
	ProcessCores float64 `json:"process_cores"`
	// CPUPer1k is process CPU-seconds per 1,000 saved messages:
	// process_cores / saved_per_s × 1,000.
	CPUPer1k float64 `json:"process_cpu_s_per_1000_msgs"`
	Failures int64   `json:"failures"`
	Run      Result  `json:"run"`
}

// ClusterCompleteness is the completeness run: what arrived of each kind
// of push, and the instances' bus counters over the run.
type ClusterCompleteness struct {
	Kinds []KindCount        `json:"kinds"`
	Bus   map[string]float64 `json:"bus_metrics"`
	Run   Result             `json:"run"`
}

// KindCount is one kind of push: received of expected.
type KindCount struct {
	Kind     string  `json:"kind"`
	Received int64   `json:"received"`
	Expected int64   `json:"expected"`
	Pct      float64 `json:"pct"`
}

func cpuOf(k int, r *Result) ClusterCPU {
	c := ClusterCPU{Instances: k, Offered: r.Params.Rate, SavedPerS: r.Throughput.Saved, ProcessCores: r.Usage.ProcessCores,
		Failures: r.Correctness.failures() + sumErrors(r.Errors), Run: *r}
	if c.SavedPerS > 0 {
		c.CPUPer1k = round3(c.ProcessCores / c.SavedPerS * 1000)
	}
	return c
}

func completenessOf(r *Result, bus map[string]float64) ClusterCompleteness {
	kind := func(name string, got, want int64) KindCount {
		k := KindCount{Kind: name, Received: got, Expected: want}
		if want > 0 {
			k.Pct = round3(float64(got) / float64(want) * 100)
		}
		return k
	}
	c := r.Counts
	return ClusterCompleteness{Run: *r, Bus: bus, Kinds: []KindCount{
		kind("2001 message push to the receiver", c.Delivered+c.Recovered, c.ExpectedDeliveries),
		kind("ACK(saved) to the sender (2101 push; the answer itself with two-phase off)", c.Saved, c.Accepted),
	}}
}

// ok: every run's counters zero, every push arrived, every session event
// closed its session. The latency targets are reported, not judged here.
func (c *ClusterResult) ok() bool {
	for _, x := range c.CPU {
		if x.Failures > 0 {
			return false
		}
	}
	if c.Latency == nil || c.Latency.A.Median["failures"]+c.Latency.B.Median["failures"] > 0 {
		return false
	}
	r := &c.Completeness.Run
	if r.Correctness.failures()+sumErrors(r.Errors) > 0 {
		return false
	}
	for _, k := range c.Completeness.Kinds {
		if k.Received < k.Expected {
			return false
		}
	}
	p := c.Propagation
	return p.Kick.NotClosed == 0 && p.Logout.NotClosed == 0 && p.Kick.WrongSession == 0 && p.Kick.Samples > 0 && p.Logout.Samples > 0
}

// writeCluster prints the step for humans.
func writeCluster(w io.Writer, c *ClusterResult) {
	fmt.Fprintf(w, "\n== %s: %d in-process instances, one database, one Redis prefix, bus %s, %d shards\n", c.Name, c.Instances, c.Bus, c.Shards)
	if r := &c.Completeness.Run; r.Name != "" {
		fmt.Fprintf(w, "   push completeness, %s (sender and receiver on two instances, neither the shard owner):\n", describe(r))
		for _, k := range c.Completeness.Kinds {
			fmt.Fprintf(w, "     %-80s %d / %d (%.3f %%)\n", k.Kind, k.Received, k.Expected, k.Pct)
		}
		fmt.Fprintf(w, "     correctness failures %d; bus counters over the run: %s\n", r.Correctness.failures()+sumErrors(r.Errors), formatMetrics(c.Completeness.Bus))
	}
	if l := c.Latency; l != nil {
		fmt.Fprintf(w, "   delivery p99, medians of %d alternating runs: local %s ms, cross-instance %s ms, difference %+.3f ms (p50 %s vs %s)\n",
			len(l.A.Runs), ms(l.A.Median["delivery_p99_ms"]), ms(l.B.Median["delivery_p99_ms"]), c.CrossMinusLocalP99,
			ms(medianOf(l.A.Runs, func(r *Result) float64 { return r.Latency.Delivery.P50 })),
			ms(medianOf(l.B.Runs, func(r *Result) float64 { return r.Latency.Delivery.P50 })))
	}
	p := c.Propagation
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "   session event\tsamples\tp50 ms\tp99 ms\tmax ms\tfrom request p99 ms\tbefore reference\tnot closed\t")
	for _, e := range []struct {
		name string
		ev   EventLatency
	}{{"login-policy kick", p.Kick}, {"logout", p.Logout}} {
		fmt.Fprintf(tw, "   %s\t%d\t%s\t%s\t%s\t%s\t%d\t%d\t\n", e.name, e.ev.Samples, ms(e.ev.Latency.P50), ms(e.ev.Latency.P99), ms(e.ev.Latency.Max),
			ms(e.ev.FromRequest.P99), e.ev.ClosedBeforeReference, e.ev.NotClosed)
	}
	tw.Flush()
	if p.Kick.WrongSession > 0 {
		fmt.Fprintf(w, "   %d kicks closed the newer session instead of the older one\n", p.Kick.WrongSession)
	}
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "   instances\toffered msg/s\tsaved msg/s\tprocess cores\tCPU-s / 1,000 msgs\tfailures\t")
	for _, x := range c.CPU {
		fmt.Fprintf(tw, "   %d\t%s\t%s\t%.3f\t%.3f\t%d\t\n", x.Instances, rate(x.Offered), rate(x.SavedPerS), x.ProcessCores, x.CPUPer1k, x.Failures)
	}
	tw.Flush()
	verdict := "OK (every correctness counter zero, every push arrived, every session event closed its session)"
	if !c.OK {
		verdict = "FAILED (see the counters above)"
	}
	fmt.Fprintf(w, "   %s\n", verdict)
}

func medianOf(runs []Result, get func(*Result) float64) float64 {
	v := make([]float64, len(runs))
	for i := range runs {
		v[i] = get(&runs[i])
	}
	return median(v)
}

func formatMetrics(m map[string]float64) string {
	if len(m) == 0 {
		return "none"
	}
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		parts = append(parts, fmt.Sprintf("%s %g", strings.TrimPrefix(k, "nexo_cluster_"), m[k]))
	}
	return strings.Join(parts, ", ")
}

func clusterText(c *ClusterResult) string {
	var b bytes.Buffer
	writeCluster(&b, c)
	if c.Latency != nil {
		writeCompare(&b, c.Latency)
	}
	return b.String()
}

// clusterCharts: CPU per 1,000 messages by cluster size, the session
// events' latency curves, the comparison, and the completeness run.
func clusterCharts(c *ClusterResult) []components.Charter {
	bar := charts.NewBar()
	bar.SetGlobalOptions(chartInit(), axisTooltip(),
		charts.WithTitleOpts(opts.Title{Title: "Process CPU-seconds per 1,000 messages by cluster size",
			Subtitle: "all instances and the load generator in one process; one run per size"}),
		charts.WithYAxisOpts(opts.YAxis{Name: "CPU-s"}), charts.WithLegendOpts(opts.Legend{Top: "bottom"}))
	var x []string
	var y []opts.BarData
	for _, p := range c.CPU {
		x = append(x, fmt.Sprintf("%d instance(s)", p.Instances))
		y = append(y, opts.BarData{Value: p.CPUPer1k})
	}
	bar.SetXAxis(x).AddSeries("CPU-s / 1,000 msgs", y)
	out := []components.Charter{bar,
		latencyChart(c.Name+": session events across instances", map[string][][2]float64{
			"login-policy kick": c.Propagation.Kick.Curve, "logout": c.Propagation.Logout.Curve}, "login-policy kick", "logout"),
	}
	if c.Latency != nil {
		out = append(out, compareChart(c.Latency)...)
	}
	if r := &c.Completeness.Run; r.Name != "" {
		out = append(out, resultCharts(r)...)
	}
	return out
}

// clusterMarkdown is the cluster section of results.md.
func clusterMarkdown(name string, c *ClusterResult) string {
	var b strings.Builder
	fmt.Fprintf(&b, "## Cluster\n\n%d in-process instances on one database and one Redis key prefix (bus `%s`, %d shards); see [cluster.md](cluster.md).\n\n", c.Instances, c.Bus, c.Shards)
	b.WriteString("| target | measured | |\n|---|---|---|\n")
	r := &c.Completeness.Run
	if r.Name != "" {
		complete := true
		var parts []string
		for _, k := range c.Completeness.Kinds {
			complete = complete && k.Received >= k.Expected
			parts = append(parts, fmt.Sprintf("%s %s / %s", strings.SplitN(k.Kind, " (", 2)[0], rate(float64(k.Received)), rate(float64(k.Expected))))
		}
		failures := r.Correctness.failures() + sumErrors(r.Errors)
		mark := "✗"
		if complete && failures == 0 {
			mark = "✓"
		}
		fmt.Fprintf(&b, "| push completeness 100 %% at 1,000 msg/s over %d instances | %s; %d correctness failures (offered %s msg/s, saved %s msg/s) | %s |\n",
			c.Instances, strings.Join(parts, "; "), failures, rate(r.Params.Rate), rate(r.Throughput.Saved), mark)
	}
	if l := c.Latency; l != nil {
		mark := "✗"
		if c.CrossMinusLocalP99 <= 1 {
			mark = "✓"
		}
		fmt.Fprintf(&b, "| cross-instance push adds ≤ 1 ms p99 over local | delivery p99 %s ms cross vs %s ms local: %+.3f ms (medians of %d alternating runs) | %s |\n",
			ms(l.B.Median["delivery_p99_ms"]), ms(l.A.Median["delivery_p99_ms"]), c.CrossMinusLocalP99, len(l.A.Runs), mark)
	}
	p := c.Propagation
	worst := max(p.Kick.Latency.P99, p.Logout.Latency.P99)
	notClosed := p.Kick.NotClosed + p.Logout.NotClosed
	mark := check(worst, 1000)
	if notClosed+p.Kick.WrongSession > 0 {
		mark = "✗"
	}
	wrong := ""
	if p.Kick.WrongSession > 0 {
		wrong = fmt.Sprintf("; %d kicks closed the newer session", p.Kick.WrongSession)
	}
	fmt.Fprintf(&b, "| kick/logout propagation p99 < 1 s | kick p99 %s ms, logout p99 %s ms (%d samples each; %d not closed within %.0f s%s) | %s |\n",
		ms(p.Kick.Latency.P99), ms(p.Logout.Latency.P99), p.Kick.Samples, notClosed, p.LimitS, wrong, mark)

	b.WriteString("\n| session event | samples | p50 ms | p99 ms | max ms | from request p99 ms |\n|---|--:|--:|--:|--:|--:|\n")
	for _, e := range []struct {
		name string
		ev   EventLatency
	}{{"login-policy kick (from the second handshake)", p.Kick}, {"logout (from the HTTP answer)", p.Logout}} {
		fmt.Fprintf(&b, "| %s | %d | %s | %s | %s | %s |\n", e.name, e.ev.Samples, ms(e.ev.Latency.P50), ms(e.ev.Latency.P99), ms(e.ev.Latency.Max), ms(e.ev.FromRequest.P99))
	}
	if l := c.Latency; l != nil {
		b.WriteString("\n| placement | saved msg/s | ACK p99 ms | ACK(saved) p99 ms | delivery p50 / p99 ms | failures | other CPU (cores) |\n|---|--:|--:|--:|--:|--:|--:|\n")
		for _, side := range []struct {
			name string
			s    *CompareSide
		}{{"local (A)", &l.A}, {"cross (B)", &l.B}} {
			m := side.s.Median
			fmt.Fprintf(&b, "| %s | %s | %s | %s | %s / %s | %s | %.2f |\n", side.name, rate(m["saved_per_s"]), ms(m["accepted_p99_ms"]), ms(m["saved_p99_ms"]),
				ms(medianOf(side.s.Runs, func(r *Result) float64 { return r.Latency.Delivery.P50 })), ms(m["delivery_p99_ms"]), okMark(m["failures"]), m["other_cores"])
		}
	}
	if len(c.CPU) > 0 {
		b.WriteString("\n| instances | offered msg/s | saved msg/s | process cores | process CPU-s / 1,000 msgs | failures |\n|--:|--:|--:|--:|--:|--:|\n")
		for _, x := range c.CPU {
			fmt.Fprintf(&b, "| %d | %s | %s | %.3f | %.3f | %s |\n", x.Instances, rate(x.Offered), rate(x.SavedPerS), x.ProcessCores, x.CPUPer1k, okMark(float64(x.Failures)))
		}
		b.WriteString("\nCPU is this process's: every instance **and the load generator** (and the suite's idle server); this machine has few cores, so it is a cost, not a scaling claim.\n")
	}
	fmt.Fprintf(&b, "\n[JSON](%s.json), [charts](%s.html)\n\n", name, name)
	return b.String()
}

// runs are every message run of the step.
func (c *ClusterResult) runs() []*Result {
	var out []*Result
	for i := range c.CPU {
		out = append(out, &c.CPU[i].Run)
	}
	if c.Latency != nil {
		for i := range c.Latency.A.Runs {
			out = append(out, &c.Latency.A.Runs[i])
		}
		for i := range c.Latency.B.Runs {
			out = append(out, &c.Latency.B.Runs[i])
		}
	}
	if c.Completeness.Run.Name != "" {
		out = append(out, &c.Completeness.Run)
	}
	return out
}
