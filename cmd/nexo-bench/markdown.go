package main

import (
	"fmt"
	"strings"
)

// header says where the figures come from.
func (l *loaded) header() string {
	m := l.index.Machine
	s := fmt.Sprintf("Measured by `make bench` (`%s`) on %s: %d CPUs (%s), %s, with MariaDB, Redis, the server and the load generator sharing the machine; the suite took %.0f s.",
		l.index.Command, l.index.StartedAt[:10], m.CPUs, firstNonEmpty(m.CPUModel, m.Arch), m.GoVersion, l.index.Seconds)
	if len(l.index.Reruns) > 0 {
		var parts []string
		for _, r := range l.index.Reruns {
			cmd := r.Command
			if i := strings.Index(cmd, "--only"); i >= 0 {
				cmd = cmd[i:]
			}
			parts = append(parts, fmt.Sprintf("`%s` (%.0f s)", cmd, r.Seconds))
		}
		s += " Steps re-run since, each replacing the earlier results of its steps: " + strings.Join(parts, ", ") + "."
	}
	if n, other, load := l.contention(); n > 0 {
		s += fmt.Sprintf(" While the %d runs sent, other processes on the machine used %.2f cores on average (of %d; the 1-minute load average at a run's start was up to %.1f): the figures are what this shared machine gave, not the server's best.",
			n, other, m.CPUs, load)
	}
	if l.index.Quick {
		s += " **Quick mode: durations and loads were cut to a fifth; these figures only show that the suite runs.**"
	}
	return s
}

// compareRows renders one comparison as two rows (A = two-phase on,
// B = off) of medians.
func compareRows(c *CompareResult, rateLabel string) string {
	row := func(side string, m map[string]float64) string {
		lag := ms(m["lag_p99_ms"])
		if side == "off" {
			lag = "–" // the answer itself is ACK(saved)
		}
		return fmt.Sprintf("| %s | %s | %s | %s / %s | %s | %s | %s | %s | %.2f |\n", rateLabel, side, rate(m["saved_per_s"]),
			ms(m["accepted_p50_ms"]), ms(m["accepted_p99_ms"]), ms(m["saved_p99_ms"]), lag, ms(m["delivery_p99_ms"]), okMark(m["failures"]), m["other_cores"])
	}
	return row("on", c.A.Median) + row("off", c.B.Median)
}

const compareHeader = "| offered msg/s | two-phase | saved msg/s | ACK p50 / p99 ms | ACK(saved) p99 ms | accepted→saved p99 ms | delivery p99 ms | failures | other CPU (cores) |\n|--:|---|--:|--:|--:|--:|--:|--:|--:|\n"

// onOffSteps are the suite's two-phase on (A) / off (B) comparisons; the
// other compared steps (webhooks-5k, redis-cluster-5k, limits-5k) compare
// something else and say nothing about two-phase off.
var onOffSteps = []string{"single-1k", "single-5k", "single-10k"}

func (l *loaded) compareTable() string {
	var b strings.Builder
	for _, name := range onOffSteps {
		if c := l.compares[name]; c != nil {
			if b.Len() == 0 {
				b.WriteString(compareHeader)
			}
			r := c.A.Runs[0].Params.Rate
			b.WriteString(compareRows(c, rate(r)))
		}
	}
	return b.String()
}

func (l *loaded) maxRateLine() string {
	r := l.ramp
	if r == nil {
		return ""
	}
	s := fmt.Sprintf("Highest sustained persisted rate found by the search (%s): **%s msg/s with two-phase on, %s msg/s with it off**",
		r.Criterion, rate(r.Max["on"]), rate(r.Max["off"]))
	if r.Ratio > 0 {
		s += fmt.Sprintf(", a ratio of %.2f×", r.Ratio)
	}
	for _, m := range r.Unbounded {
		s += fmt.Sprintf(" (two-phase %s passed every rate tried: its maximum is higher)", m)
	}
	s += "."
	on, off := l.sustainedInCompares()
	if on > r.Max["on"] || off > r.Max["off"] {
		s += fmt.Sprintf(" The on/off comparisons, medians of 3 runs, meet the same criterion up to **%s with two-phase on** and %s with it off:"+
			" which rate a mode reaches depends on how much of the shared machine other processes took during its runs (the other-CPU columns), so both figures are given.",
			l.compareRate(on), l.compareRate(off))
	}
	return s
}

// compareRate formats a sustainedInCompares figure: 0 means not even at the
// lowest rate compared.
func (l *loaded) compareRate(v float64) string {
	if v > 0 {
		return rate(v) + " msg/s"
	}
	lowest := 0.0
	for _, name := range onOffSteps {
		if c := l.compares[name]; c != nil && len(c.A.Runs) > 0 && (lowest == 0 || c.A.Runs[0].Params.Rate < lowest) {
			lowest = c.A.Runs[0].Params.Rate
		}
	}
	return "below " + rate(lowest) + " msg/s"
}

// sustainedInCompares is the highest offered rate at which each side of the
// on/off comparisons meets the search's criterion on its medians.
func (l *loaded) sustainedInCompares() (on, off float64) {
	for _, name := range onOffSteps {
		c := l.compares[name]
		if c == nil || len(c.A.Runs) == 0 {
			continue
		}
		offered := c.A.Runs[0].Params.Rate
		meets := func(m map[string]float64) bool {
			return m["saved_per_s"] >= 0.97*offered && m["saved_p99_ms"] < rampLimitMs && m["failures"] == 0
		}
		if meets(c.A.Median) {
			on = max(on, offered)
		}
		if meets(c.B.Median) {
			off = max(off, offered)
		}
	}
	return on, off
}

func (l *loaded) runsTable(names ...string) string {
	var b strings.Builder
	for _, n := range names {
		if r := l.runs[n]; r != nil {
			if b.Len() == 0 {
				b.WriteString(runHeader)
			}
			b.WriteString(runRow(r, n))
		}
	}
	return b.String()
}

func (l *loaded) connectLine() string {
	r := l.runs["connect-10k"]
	if r == nil || r.Connect == nil {
		return ""
	}
	c := r.Connect
	s := fmt.Sprintf("Connection storm: %s of %s sessions opened in %.2f s (%s/s, handshake p99 %s ms); %s answered a ping after %.0f s idle.",
		rate(float64(c.Established)), rate(float64(c.Connections)), c.StormS, rate(c.RatePerS), ms(c.Handshake.P99), rate(float64(c.AliveAfterIdle)), c.IdleS)
	if c.ServerOpen != nil {
		s += fmt.Sprintf(" Server memory per connection: %.1f KiB RSS, %.1f KiB Go heap + stacks, %.2f goroutines.",
			c.ServerRSSPerConn/1024, c.ServerHeapPerConn/1024, c.ServerGoroutinesPC)
	}
	return s
}

// readmeSection is the README's performance section (between the markers).
func (l *loaded) readmeSection(dir string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s Full results, charts and how each figure is measured: [%s/results.md](%s/results.md), [%s/README.md](%s/README.md).\n\n",
		l.header(), dir, dir, dir, dir)
	b.WriteString("Latencies are measured by the client from each message's scheduled send time (open loop), so a stall shows up as latency; ACK is the first answer (ACK(accepted) with two-phase on, ACK(saved) with it off). Single chat, 100 pairs, medians of alternating runs:\n\n")
	b.WriteString(l.compareTable())
	if s := l.maxRateLine(); s != "" {
		b.WriteString("\n" + s + "\n")
	}
	if t := l.runsTable("closed-50", "closed-50-saved", "open-50x10", "group-10x10", "group-500", "reconnect"); t != "" {
		b.WriteString("\n" + t)
	}
	b.WriteString("\nAgainst the issue's targets:\n\n" + l.targetsTable())
	if s := l.connectLine(); s != "" {
		b.WriteString("\n" + s + "\n")
	}
	b.WriteString("\nReproduce with `make bench` (about ten minutes; MariaDB and Redis on localhost), or point the harness at any deployment: `go run ./cmd/nexo-bench --url http://host:8080 --scenario single --rate 5000`.\n")
	return b.String()
}

// resultsMarkdown is docs/bench/results.md.
func (l *loaded) resultsMarkdown() string {
	var b strings.Builder
	b.WriteString("# nexo-bench results\n\n")
	b.WriteString("Generated by `nexo-bench summarize` from the JSON files in this directory; rerun `make bench` rather than editing it. README.md in this directory explains every figure.\n\n")
	b.WriteString(l.header() + "\n\n")
	b.WriteString("## Against the targets\n\n" + l.targetsTable() + "\n")
	if t := l.compareTable(); t != "" {
		b.WriteString("## Single chat: two-phase on vs off\n\n100 sender→receiver pairs, open loop at the offered rate, medians of the alternating runs (A = on, B = off):\n\n" + t + "\n")
		for _, name := range []string{"single-1k", "single-5k", "single-10k"} {
			if c := l.compares[name]; c != nil {
				fmt.Fprintf(&b, "- %s: B/A ratios:", name)
				for _, h := range headlines {
					if r, ok := c.Ratios[h.key]; ok {
						fmt.Fprintf(&b, " %s %.2f×;", h.name, r)
					}
				}
				fmt.Fprintf(&b, " [JSON](%s.json), [charts](%s.html)\n", name, name)
			}
		}
		b.WriteString("\n")
	}
	if l.ramp != nil {
		b.WriteString("## Highest sustained persisted rate\n\n" + l.maxRateLine() + "\n\n")
		b.WriteString("| two-phase | offered msg/s | run | saved msg/s | ACK p99 ms | ACK(saved) p99 ms | accepted→saved p99 ms | other CPU (cores) | passed |\n|---|--:|--:|--:|--:|--:|--:|--:|---|\n")
		for _, st := range l.ramp.Steps {
			pass := "yes"
			if !st.Pass {
				pass = "no: " + st.Why
			}
			fmt.Fprintf(&b, "| %s | %s | %d | %s | %s | %s | %s | %.2f | %s |\n", st.Mode, rate(st.Rate), max(st.Attempt, 1), rate(st.SavedPerS),
				ms(st.AckP99), ms(st.SavedP99), ms(st.LagP99), st.OtherCores, pass)
		}
		b.WriteString("\n[JSON](max-rate.json), [charts](max-rate.html)\n\n")
	}
	if t := l.runsTable("closed-50", "closed-50-saved", "open-50x10"); t != "" {
		b.WriteString("## The peers' scenarios\n\n" + t + "\n")
		b.WriteString("For scale (peers measured on this kind of machine by the same method): Tinode with MariaDB, whose ack follows the MySQL commit like ACK(saved), 1,500–2,100 msg/s at 50 pairs closed loop with ack p99 47–104 ms, and p99 5.8–6.7 ms at 50 × 10 msg/s; Centrifugo with its Redis engine (no database) 15–24k msg/s closed loop with p99 6–9 ms, and p99 1.1–1.4 ms at 50 × 10 msg/s.\n\n")
	}
	if t := l.runsTable("group-10x10", "group-500"); t != "" {
		b.WriteString("## Group fan-out\n\nDelivery latency is to every online member; `delivered` counts member deliveries.\n\n" + t + "\n")
		for _, n := range []string{"group-10x10", "group-500"} {
			if r := l.runs[n]; r != nil {
				fmt.Fprintf(&b, "- %s: %s deliveries/s, %d of %d expected deliveries (%d by notify-mode pull). [JSON](%s.json), [charts](%s.html)\n",
					n, rate(r.Throughput.Delivered), r.Counts.Delivered, r.Counts.ExpectedDeliveries, r.Counts.DeliveredByPull, n, n)
			}
		}
		b.WriteString("\n")
	}
	if r := l.runs["mix-50x10"]; r != nil {
		c, k := r.Counts, r.Correctness
		b.WriteString("## The chat mix: pictures and actions\n\n" + runHeader + runRow(r, describe(r)))
		fmt.Fprintf(&b, "\n%d pictures, %d shown with their object (%d mismatched); %d actions (%d edits, %d reactions, %d deletes), %d answered, notices %d of %d expected (%d missing, %d duplicate); action answer p99 %s ms, notice p99 %s ms. [JSON](mix-50x10.json), [charts](mix-50x10.html)\n\n",
			c.Pictures, c.PicturesReceived, k.PictureMismatches, c.ActionsSent, c.Edits, c.Reactions, c.Deletes, c.ActionsAnswered,
			c.NoticesReceived, c.NoticesExpected, k.NoticesMissing, k.NoticesDuplicate, ms(r.Latency.ActionAnswer.P99), ms(r.Latency.ActionNotice.P99))
	}
	if r := l.runs["reconnect"]; r != nil && r.Reconnect != nil {
		rc := r.Reconnect
		b.WriteString("## Reconnect and gap fill\n\n" + runHeader + runRow(r, describe(r)))
		fmt.Fprintf(&b, "\n%d receivers dropped for %.0f s; %d reconnected (handshake p99 %s ms); %d messages recovered (%d pushed to the new session — the server's resend or pushes in flight — the rest by %d pulls), gap filled p50 %s ms / max %s ms after the new session; %d sessions incomplete; %d resent duplicates. [JSON](reconnect.json), [charts](reconnect.html)\n\n",
			rc.Dropped, rc.OfflineS, rc.Reconnected, ms(rc.Reconnect.P99), r.Counts.Recovered, r.Counts.RecoveredByResend, rc.Pulls, ms(rc.GapFill.P50), ms(rc.GapFill.Max), rc.Incomplete, r.Correctness.ResentDuplicates)
	}
	if s := l.connectLine(); s != "" {
		b.WriteString("## Connection storm\n\n" + s + " [JSON](connect-10k.json), [charts](connect-10k.html)\n\n")
	}
	for _, e := range l.index.Entries {
		if c := l.clusters[e.Name]; c != nil && e.Error == "" {
			b.WriteString(clusterMarkdown(e.Name, c))
		}
	}
	b.WriteString(l.goalsMarkdown())
	b.WriteString("## Every step\n\n| step | what | result | files |\n|---|---|---|---|\n")
	for _, e := range l.index.Entries {
		switch {
		case e.Error != "":
			fmt.Fprintf(&b, "| %s | %s | **did not run**: %s | – |\n", e.Name, e.Title, strings.ReplaceAll(e.Error, "|", "\\|"))
		case !e.OK:
			fmt.Fprintf(&b, "| %s | %s | **correctness failure** | [JSON](%s), [charts](%s) |\n", e.Name, e.Title, e.File, e.HTML)
		default:
			fmt.Fprintf(&b, "| %s | %s | ok | [JSON](%s), [charts](%s) |\n", e.Name, e.Title, e.File, e.HTML)
		}
	}
	return b.String()
}

// contention averages the CPU the rest of the machine used during every
// run of the suite, and the highest starting load average.
func (l *loaded) contention() (runs int, otherCores, maxLoad float64) {
	var sum float64
	add := func(r *Result) {
		if r.Connect != nil {
			return
		}
		runs++
		sum += r.Usage.OtherCores
		maxLoad = max(maxLoad, r.Usage.Load1Start)
	}
	for _, r := range l.runs {
		add(r)
	}
	for _, c := range l.compares {
		for i := range c.A.Runs {
			add(&c.A.Runs[i])
		}
		for i := range c.B.Runs {
			add(&c.B.Runs[i])
		}
	}
	if l.ramp != nil {
		for i := range l.ramp.Runs {
			add(&l.ramp.Runs[i])
		}
	}
	for _, c := range l.clusters {
		for _, r := range c.runs() {
			add(r)
		}
	}
	if runs > 0 {
		otherCores = round3(sum / float64(runs))
	}
	return runs, otherCores, maxLoad
}

// shortNames label the suite's steps in the README's compact table.
var shortNames = map[string]string{
	"closed-50":       "50 pairs, closed loop, 1 in flight until ACK, 20 s",
	"closed-50-saved": "50 pairs, closed loop, 1 in flight until ACK(saved), 10 s",
	"open-50x10":      "50 pairs × 10 msg/s, open loop, 20 s",
	"group-10x10":     "10 groups × 11 members online, 500 msg/s",
	"group-500":       "one 500-member group online, 20 msg/s (notify mode)",
	"reconnect":       "50 pairs, 500 msg/s, half the receivers dropped 2 s",
	"search-1k":       "50 pairs, 1,000 msg/s, 1 in 50 searched after ACK(saved)",
}

// check marks a figure against an upper bound: "✓" when below it.
func check(v, bound float64) string {
	if v < bound {
		return "✓"
	}
	return "✗"
}

// atLeast marks a figure against a lower bound.
func atLeast(v, bound float64) string {
	if v >= bound {
		return "✓"
	}
	return "✗"
}

// targetsTable sets the measured figures beside the throughput targets.
func (l *loaded) targetsTable() string {
	var b strings.Builder
	b.WriteString("| target | measured | |\n|---|---|---|\n")
	if c := l.compares["single-5k"]; c != nil {
		m := c.A.Median
		fmt.Fprintf(&b, "| single chat, two-phase on, 5,000 msg/s: accepted p99 < 5 ms | %s ms | %s |\n", ms(m["accepted_p99_ms"]), check(m["accepted_p99_ms"], 5))
		fmt.Fprintf(&b, "| … saved lag p99 < 50 ms | %s ms | %s |\n", ms(m["lag_p99_ms"]), check(m["lag_p99_ms"], 50))
		fmt.Fprintf(&b, "| … delivery p99 < 20 ms | %s ms | %s |\n", ms(m["delivery_p99_ms"]), check(m["delivery_p99_ms"], 20))
		var failures float64
		for i := range c.A.Runs {
			failures += float64(c.A.Runs[i].Correctness.failures() + sumErrors(c.A.Runs[i].Errors))
		}
		fmt.Fprintf(&b, "| … zero lost / duplicated / reordered | %.0f failures in %d runs (saved %s msg/s of 5,000, median) | %s |\n",
			failures, len(c.A.Runs), rate(m["saved_per_s"]), check(failures, 0.5))
	}
	if r := l.ramp; r != nil {
		on, off := l.sustainedInCompares()
		fmt.Fprintf(&b, "| highest sustained persisted rate with saved lag p99 < 100 ms (here: ACK(saved) p99 from the due time < 100 ms, which bounds the lag), on and off, and their ratio | search: on %s, off %s msg/s (%.2f×); on/off comparisons (medians of 3): on %s, off %s | |\n",
			rate(r.Max["on"]), rate(r.Max["off"]), r.Ratio, l.compareRate(on), l.compareRate(off))
		best := max(on, r.Max["on"])
		fmt.Fprintf(&b, "| persist at least 10× Tinode (1,500–2,100 msg/s), i.e. 15,000–21,000 msg/s | %s msg/s | %s |\n", rate(best), atLeast(best, 15000))
	}
	if r := l.runs["connect-10k"]; r != nil && r.Connect != nil {
		c := r.Connect
		fmt.Fprintf(&b, "| 10,000 idle connections held; memory per connection reported | %s held; %.1f KiB heap + stacks, %.1f KiB RSS per connection | %s |\n",
			rate(float64(c.AliveAfterIdle)), c.ServerHeapPerConn/1024, c.ServerRSSPerConn/1024, atLeast(float64(c.AliveAfterIdle), 10000))
	}
	if r := l.runs["closed-50"]; r != nil {
		fmt.Fprintf(&b, "| ACK(accepted) as fast as Centrifugo's publish: closed loop 50 pairs p99 6–9 ms | p99 %s ms at %s msg/s | %s |\n",
			ms(r.Latency.Accepted.P99), rate(r.Throughput.Accepted), check(r.Latency.Accepted.P99, 9))
	}
	if r := l.runs["open-50x10"]; r != nil {
		fmt.Fprintf(&b, "| … 50 × 10 msg/s p99 1.1–1.4 ms | p99 %s ms | %s |\n", ms(r.Latency.Accepted.P99), check(r.Latency.Accepted.P99, 1.4))
	}
	return b.String()
}
