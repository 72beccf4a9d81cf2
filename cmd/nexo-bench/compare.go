package main

import (
	"context"
	"fmt"
	"io"
	"slices"
	"text/tabwriter"
)

// headline is one figure compared and summarised across runs.
type headline struct {
	key, name string
	get       func(*Result) float64
	// info marks a figure about the conditions, not the server: no ratio.
	info bool
}

var headlines = []headline{
	{"saved_per_s", "saved msg/s", func(r *Result) float64 { return r.Throughput.Saved }, false},
	{"delivered_per_s", "delivered msg/s", func(r *Result) float64 { return r.Throughput.Delivered }, false},
	{"accepted_p50_ms", "ACK p50 ms", func(r *Result) float64 { return r.Latency.Accepted.P50 }, false},
	{"accepted_p99_ms", "ACK p99 ms", func(r *Result) float64 { return r.Latency.Accepted.P99 }, false},
	{"saved_p99_ms", "ACK(saved) p99 ms", func(r *Result) float64 { return r.Latency.Saved.P99 }, false},
	{"lag_p99_ms", "accepted→saved p99 ms", func(r *Result) float64 { return r.Latency.Lag.P99 }, false},
	{"delivery_p99_ms", "delivery p99 ms", func(r *Result) float64 { return r.Latency.Delivery.P99 }, false},
	{"delivery_p999_ms", "delivery p99.9 ms", func(r *Result) float64 { return r.Latency.Delivery.P999 }, false},
	{"searchable_p99_ms", "searchable after ACK(saved) p99 ms", func(r *Result) float64 { return r.Latency.Searchable.P99 }, false},
	{"failures", "correctness failures", func(r *Result) float64 { return float64(r.Correctness.failures() + sumErrors(r.Errors)) }, false},
	{"process_cores", "bench process CPU (cores)", func(r *Result) float64 { return r.Usage.ProcessCores }, true},
	{"other_cores", "other processes' CPU (cores)", func(r *Result) float64 { return r.Usage.OtherCores }, true},
}

// CompareSide is one configuration of a comparison.
type CompareSide struct {
	Label  string             `json:"label"`
	URL    string             `json:"url"`
	Mode   string             `json:"mode,omitempty"`
	Median map[string]float64 `json:"median"`
	Runs   []Result           `json:"runs"`
}

// CompareResult is what --compare and --compare-url write: both sides'
// runs, their medians, and B/A for every headline figure.
type CompareResult struct {
	Tool   string             `json:"tool"`
	Schema int                `json:"schema"`
	Name   string             `json:"name"`
	A      CompareSide        `json:"a"`
	B      CompareSide        `json:"b"`
	Ratios map[string]float64 `json:"ratios_b_over_a"`
}

// runCompare alternates runs A, B, A, B ... (o.Repeat each) so that drift
// of the shared machine (MariaDB's buffer pool, Redis memory, page cache)
// hits both sides alike, and reports medians. switchTo, when set, moves
// the one server between configurations; otherwise a and b are two
// deployments with their own sessions.
func runCompare(ctx context.Context, log io.Writer, o *options, a, b *session, specA, specB string, sw modeSwitch) (*CompareResult, error) {
	name := o.label()
	out := &CompareResult{Tool: "nexo-bench", Schema: 1, Name: name,
		A: CompareSide{Label: "A", URL: a.url}, B: CompareSide{Label: "B", URL: b.url}}
	for i := 0; i < o.Repeat; i++ {
		for _, side := range []struct {
			s    *session
			spec string
			cs   *CompareSide
		}{{a, specA, &out.A}, {b, specB, &out.B}} {
			if sw != nil {
				mode, err := sw.SetMode(side.spec)
				if err != nil {
					return nil, err
				}
				side.s.mode, side.cs.Mode = mode, mode
			}
			label := fmt.Sprintf("%s [%s %d/%d]", name, side.cs.Label, i+1, o.Repeat)
			res, err := side.s.runMessages(ctx, label)
			if err != nil {
				return nil, err
			}
			writeTable(log, &res)
			side.cs.Runs = append(side.cs.Runs, res)
		}
	}
	if sw != nil {
		if _, err := sw.SetMode(specA); err != nil {
			return nil, err
		}
	}
	out.A.Median, out.B.Median = medians(out.A.Runs), medians(out.B.Runs)
	out.Ratios = map[string]float64{}
	for _, h := range headlines {
		if av := out.A.Median[h.key]; av != 0 && !h.info {
			out.Ratios[h.key] = round3(out.B.Median[h.key] / av)
		}
	}
	return out, nil
}

// medians returns the median of every headline figure over runs.
func medians(runs []Result) map[string]float64 {
	out := map[string]float64{}
	for _, h := range headlines {
		v := make([]float64, len(runs))
		for i := range runs {
			v[i] = h.get(&runs[i])
		}
		out[h.key] = median(v)
	}
	return out
}

func median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := slices.Clone(v)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return round3((s[len(s)/2-1] + s[len(s)/2]) / 2)
}

// writeCompare prints the medians side by side with B/A.
func writeCompare(w io.Writer, c *CompareResult) {
	fmt.Fprintf(w, "\n== compare %s: medians of %d runs each, alternating A/B\n", c.Name, len(c.A.Runs))
	fmt.Fprintf(w, "   A: %s %s\n   B: %s %s\n", c.A.URL, c.A.Mode, c.B.URL, c.B.Mode)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "   figure\tA\tB\tB/A\t")
	for _, h := range headlines {
		ratio := "-"
		if r, ok := c.Ratios[h.key]; ok {
			ratio = fmt.Sprintf("%.2f×", r)
		}
		fmt.Fprintf(tw, "   %s\t%.3f\t%.3f\t%s\t\n", h.name, c.A.Median[h.key], c.B.Median[h.key], ratio)
	}
	tw.Flush()
}
