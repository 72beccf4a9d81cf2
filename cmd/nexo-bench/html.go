package main

import (
	"bytes"
	_ "embed"
	"fmt"
	"html"
	"io"
	"regexp"
	"strconv"
	"strings"

	"github.com/go-echarts/go-echarts/v2/charts"
	"github.com/go-echarts/go-echarts/v2/components"
	"github.com/go-echarts/go-echarts/v2/opts"
)

// The HTML reports are go-echarts pages with the text table on top. The
// chart script is Apache ECharts vendored in assets/ (see its README) and
// inlined into the page, so a report is one self-contained file that renders
// offline, where benchmarks run.

//go:embed assets/echarts.min.js
var echartsJS string

// remoteScript matches the <script src=...> tags go-echarts writes for its
// asset host; writeHTML replaces each with the embedded script.
var remoteScript = regexp.MustCompile(`<script src="[^"]*"></script>`)

func chartInit() charts.GlobalOpts {
	return charts.WithInitializationOpts(opts.Initialization{Width: "1000px", Height: "420px"})
}

func axisTooltip() charts.GlobalOpts {
	return charts.WithTooltipOpts(opts.Tooltip{Show: opts.Bool(true), Trigger: "axis"})
}

// latencyChart plots latency against percentile for each histogram.
func latencyChart(title string, curves map[string][][2]float64, names ...string) *charts.Line {
	line := charts.NewLine()
	line.SetGlobalOptions(chartInit(), axisTooltip(),
		charts.WithTitleOpts(opts.Title{Title: title, Subtitle: "latency by percentile, ms (log scale), from each message's due time"}),
		charts.WithXAxisOpts(opts.XAxis{Name: "percentile"}),
		charts.WithYAxisOpts(opts.YAxis{Name: "ms", Type: "log"}),
		charts.WithLegendOpts(opts.Legend{Top: "bottom"}))
	var x []string
	for _, q := range curveQuantiles {
		x = append(x, "p"+strconv.FormatFloat(q, 'f', -1, 64))
	}
	line.SetXAxis(x)
	for _, n := range names {
		var data []opts.LineData
		for _, p := range curves[n] {
			data = append(data, opts.LineData{Value: max(p[1], 0.001)})
		}
		if len(data) > 0 {
			line.AddSeries(n, data)
		}
	}
	return line
}

// timelineCharts plots throughput and p99 latencies per second.
func timelineCharts(r *Result) []components.Charter {
	if len(r.Timeline) == 0 {
		return nil
	}
	x := make([]string, len(r.Timeline))
	for i, p := range r.Timeline {
		x[i] = strconv.Itoa(p.Second)
	}
	series := func(get func(TimelinePoint) float64) []opts.LineData {
		out := make([]opts.LineData, len(r.Timeline))
		for i, p := range r.Timeline {
			out[i] = opts.LineData{Value: get(p)}
		}
		return out
	}
	sub := fmt.Sprintf("seconds since sending started; warm-up ends at %gs, sending stops at %gs", r.Params.WarmupS, r.Params.WarmupS+r.Params.DurationS)
	tp := charts.NewLine()
	tp.SetGlobalOptions(chartInit(), axisTooltip(),
		charts.WithTitleOpts(opts.Title{Title: "Throughput per second", Subtitle: sub}),
		charts.WithXAxisOpts(opts.XAxis{Name: "s"}), charts.WithYAxisOpts(opts.YAxis{Name: "msg/s"}),
		charts.WithLegendOpts(opts.Legend{Top: "bottom"}))
	tp.SetXAxis(x).
		AddSeries("sent", series(func(p TimelinePoint) float64 { return float64(p.Sent) })).
		AddSeries("accepted", series(func(p TimelinePoint) float64 { return float64(p.Accepted) })).
		AddSeries("saved", series(func(p TimelinePoint) float64 { return float64(p.Saved) })).
		AddSeries("delivered", series(func(p TimelinePoint) float64 { return float64(p.Delivered) }))
	lat := charts.NewLine()
	lat.SetGlobalOptions(chartInit(), axisTooltip(),
		charts.WithTitleOpts(opts.Title{Title: "p99 latency per second (ms)", Subtitle: sub + "; events of that second, 2 significant digits"}),
		charts.WithXAxisOpts(opts.XAxis{Name: "s"}), charts.WithYAxisOpts(opts.YAxis{Name: "ms"}),
		charts.WithLegendOpts(opts.Legend{Top: "bottom"}))
	lat.SetXAxis(x).
		AddSeries("ACK p99", series(func(p TimelinePoint) float64 { return p.AcceptedP99 })).
		AddSeries("accepted→saved lag p99", series(func(p TimelinePoint) float64 { return p.LagP99 })).
		AddSeries("delivery p99", series(func(p TimelinePoint) float64 { return p.DeliveryP99 }))
	return []components.Charter{tp, lat}
}

// resultCharts are the charts of one run.
func resultCharts(r *Result) []components.Charter {
	if r.Connect != nil {
		return []components.Charter{latencyChart(r.Name+": WebSocket handshake", r.Curves, "handshake")}
	}
	out := []components.Charter{latencyChart(r.Name, r.Curves, "accepted", "saved", "accepted_to_saved", "delivery")}
	return append(out, timelineCharts(r)...)
}

// compareChart shows both sides' median latencies and throughput.
func compareChart(c *CompareResult) []components.Charter {
	bar := func(title, unit string, keys ...string) *charts.Bar {
		b := charts.NewBar()
		b.SetGlobalOptions(chartInit(), axisTooltip(),
			charts.WithTitleOpts(opts.Title{Title: title, Subtitle: fmt.Sprintf("medians of %d alternating runs per side; A: %s %s; B: %s %s", len(c.A.Runs), c.A.Mode, c.A.URL, c.B.Mode, c.B.URL)}),
			charts.WithYAxisOpts(opts.YAxis{Name: unit}), charts.WithLegendOpts(opts.Legend{Top: "bottom"}))
		var x []string
		var a, bb []opts.BarData
		for _, k := range keys {
			for _, h := range headlines {
				if h.key == k {
					x = append(x, h.name)
				}
			}
			a, bb = append(a, opts.BarData{Value: c.A.Median[k]}), append(bb, opts.BarData{Value: c.B.Median[k]})
		}
		b.SetXAxis(x).AddSeries("A", a).AddSeries("B", bb)
		return b
	}
	out := []components.Charter{
		bar(c.Name+": latency", "ms", "accepted_p50_ms", "accepted_p99_ms", "saved_p99_ms", "lag_p99_ms", "delivery_p99_ms"),
		bar(c.Name+": throughput", "msg/s", "saved_per_s", "delivered_per_s"),
	}
	for _, side := range []*CompareSide{&c.A, &c.B} {
		if n := len(side.Runs); n > 0 {
			r := &side.Runs[n-1]
			out = append(out, latencyChart(fmt.Sprintf("%s, last run (%s)", side.Label, side.Mode+" "+side.URL), r.Curves,
				"accepted", "saved", "accepted_to_saved", "delivery"))
		}
	}
	return out
}

// writeHTML renders charts as one page with text (the human table) above
// them.
func writeHTML(w io.Writer, title, text string, chs []components.Charter) error {
	page := components.NewPage().SetPageTitle(title)
	page.AddCharts(chs...)
	var buf bytes.Buffer
	if err := page.Render(&buf); err != nil {
		return err
	}
	out := remoteScript.ReplaceAllLiteralString(buf.String(), "")
	out = strings.Replace(out, "</head>", "<script>\n"+echartsJS+"\n</script>\n</head>", 1)
	pre := "<body>\n<h2 style=\"font-family:sans-serif\">" + html.EscapeString(title) + "</h2>\n<pre style=\"font-size:13px\">" +
		html.EscapeString(strings.TrimSpace(text)) + "</pre>\n"
	_, err := io.WriteString(w, strings.Replace(out, "<body>", pre, 1))
	return err
}

// rampCharts plots the rate search: saved throughput and ACK(saved) p99
// against the offered rate, per mode.
func rampCharts(r *RampResult) []components.Charter {
	var rates []float64
	seen := map[float64]bool{}
	for _, st := range r.Steps {
		if !seen[st.Rate] {
			seen[st.Rate] = true
			rates = append(rates, st.Rate)
		}
	}
	x := make([]string, len(rates))
	for i, v := range rates {
		x[i] = strconv.FormatFloat(v, 'f', -1, 64)
	}
	chart := func(title, unit string, get func(RampStep) float64) *charts.Line {
		l := charts.NewLine()
		l.SetGlobalOptions(chartInit(), axisTooltip(),
			charts.WithTitleOpts(opts.Title{Title: title, Subtitle: r.Criterion}),
			charts.WithXAxisOpts(opts.XAxis{Name: "offered msg/s"}), charts.WithYAxisOpts(opts.YAxis{Name: unit}),
			charts.WithLegendOpts(opts.Legend{Top: "bottom"}))
		l.SetXAxis(x)
		for _, mode := range []string{"on", "off"} {
			data := make([]opts.LineData, len(rates))
			for i, rate := range rates {
				for _, st := range r.Steps {
					if st.Mode == mode && st.Rate == rate {
						data[i] = opts.LineData{Value: get(st)}
					}
				}
			}
			l.AddSeries("two-phase "+mode, data)
		}
		return l
	}
	return []components.Charter{
		chart("Saved throughput by offered rate", "saved msg/s", func(s RampStep) float64 { return s.SavedPerS }),
		chart("ACK(saved) p99 by offered rate", "ms", func(s RampStep) float64 { return s.SavedP99 }),
	}
}
