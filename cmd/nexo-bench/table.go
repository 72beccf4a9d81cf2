package main

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"text/tabwriter"
)

// describe is the one-line description of a run's load.
func describe(r *Result) string {
	p := r.Params
	var b strings.Builder
	switch r.Scenario {
	case "connect":
		fmt.Fprintf(&b, "%d connections (%d users × %d platforms), idle %.0fs", p.Connections, r.Connect.Users, connectPlatforms, p.DurationS)
		return b.String()
	case "group":
		fmt.Fprintf(&b, "%d groups × %d members (%.0f%% online)", p.Groups, p.Members, p.OnlineShare*100)
	default:
		fmt.Fprintf(&b, "%d pairs", p.Pairs)
	}
	if p.Loop == "open" {
		fmt.Fprintf(&b, ", open loop %g msg/s", p.Rate)
	} else {
		fmt.Fprintf(&b, ", closed loop %d in flight per sender (until %s)", p.Inflight, p.Await)
	}
	fmt.Fprintf(&b, ", %d senders, %gs measured after %gs warm-up, %d-byte text", p.Senders, p.DurationS, p.WarmupS, p.Payload)
	if p.PictureShare > 0 {
		fmt.Fprintf(&b, ", %g%% pictures", p.PictureShare*100)
	}
	if p.ActionShare > 0 {
		fmt.Fprintf(&b, ", %g%% actions", p.ActionShare*100)
	}
	return b.String()
}

// writeTable prints a run for humans.
func writeTable(w io.Writer, r *Result) {
	fmt.Fprintf(w, "\n== %s: %s\n", r.Name, describe(r))
	where := r.Target.URL
	if r.Target.InProcess {
		where += " (in-process"
		if r.Target.Mode != "" {
			where += ", " + r.Target.Mode
		}
		where += ")"
	}
	u := r.Usage
	fmt.Fprintf(w, "   target %s; %d CPUs, %s\n", where, r.Machine.CPUs, r.Machine.GoVersion)
	if r.Connect == nil {
		fmt.Fprintf(w, "   CPU while sending: machine %.0f%% busy = this process %.2f + redis %.2f + mariadb %.2f + other %.2f cores (load %.1f at start)\n",
			u.MachineBusyPct, u.ProcessCores, u.RedisCores, u.MySQLCores, u.OtherCores, u.Load1Start)
	}
	if r.Connect != nil {
		writeConnect(w, r.Connect)
	} else {
		writeMessages(w, r)
	}
	writeErrors(w, r.Errors)
	for _, n := range r.Notes {
		fmt.Fprintf(w, "   note: %s\n", n)
	}
	verdict := "OK (every correctness counter is zero)"
	if !r.OK {
		verdict = "FAILED (see the counters above)"
	}
	fmt.Fprintf(w, "   verdict: %s\n", verdict)
}

func writeMessages(w io.Writer, r *Result) {
	t := r.Throughput
	fmt.Fprintf(w, "   throughput/s: sent %.0f  accepted %.0f  saved %.0f  delivered %.0f\n", t.Sent, t.Accepted, t.Saved, t.Delivered)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "   latency ms (from due time)\tcount\tp50\tp90\tp99\tp99.9\tmax\t")
	row := func(name string, p Percentiles) {
		fmt.Fprintf(tw, "   %s\t%d\t%.3f\t%.3f\t%.3f\t%.3f\t%.3f\t\n", name, p.Count, p.P50, p.P90, p.P99, p.P999, p.Max)
	}
	l := r.Latency
	row("ACK (first answer)", l.Accepted)
	row("ACK(saved)", l.Saved)
	row("accepted→saved lag", l.Lag)
	row("delivery (push)", l.Delivery)
	row("send delay (generator)", l.SendDelay)
	if l.ActionAnswer.Count > 0 {
		row("action answer", l.ActionAnswer)
		row("action notice", l.ActionNotice)
	}
	if l.Recovery.Count > 0 {
		row("recovered after reconnect", l.Recovery)
	}
	if l.Searchable.Count > 0 {
		row("searchable after ACK(saved)", l.Searchable)
	}
	tw.Flush()
	c, k := r.Counts, r.Correctness
	fmt.Fprintf(w, "   messages %d (measured %d): accepted %d (answer accepted %d, saved %d), saved %d, refused %d; deliveries %d of %d expected",
		c.Messages, c.Measured, c.Accepted, c.AckAccepted, c.AckSaved, c.Saved, c.Refused, c.Delivered+c.Recovered, c.ExpectedDeliveries)
	if c.DeliveredByPull > 0 {
		fmt.Fprintf(w, " (%d read by pull after a 2102 notify)", c.DeliveredByPull)
	}
	if c.Recovered > 0 {
		fmt.Fprintf(w, "; %d recovered after a reconnect (%d of them pushed to the new session: resend or in flight)", c.Recovered, c.RecoveredByResend)
	}
	if c.SearchProbes > 0 {
		fmt.Fprintf(w, "; search probes %d, not found within 5 s %d", c.SearchProbes, c.SearchMisses)
	}
	fmt.Fprintln(w)
	writeMix(w, r)
	fmt.Fprintf(w, "   correctness: lost unsaved %d, lost deliveries %d, unanswered %d, duplicates raw %d / after dedupe %d, seq conflicts %d,\n",
		k.LostUnsaved, k.LostDeliveries, k.Unanswered, k.DuplicatesRaw, k.DuplicatesDeduped, k.SeqConflicts)
	fmt.Fprintf(w, "                reorders receiver %d / sender %d, seq gaps %d, resequenced %d, unavailable %d, unexpected pushes %d; resent duplicates %d (by design)\n",
		k.ReordersReceiver, k.ReordersSender, k.SeqGaps, k.Resequenced, k.Unavailable, k.Unexpected, k.ResentDuplicates)
	if rc := r.Reconnect; rc != nil {
		fmt.Fprintf(w, "   reconnect: dropped %d for %.1fs, reconnected %d (handshake p99 %.1f ms), gap filled in p50 %.1f / max %.1f ms with %d pulls, incomplete %d\n",
			rc.Dropped, rc.OfflineS, rc.Reconnected, rc.Reconnect.P99, rc.GapFill.P50, rc.GapFill.Max, rc.Pulls, rc.Incomplete)
	}
}

func writeConnect(w io.Writer, c *ConnectResult) {
	fmt.Fprintf(w, "   opened %d of %d in %.2fs (%.0f/s); handshake ms p50 %.2f p99 %.2f max %.2f\n",
		c.Established, c.Connections, c.StormS, c.RatePerS, c.Handshake.P50, c.Handshake.P99, c.Handshake.Max)
	fmt.Fprintf(w, "   after %.0fs idle: %d answered a ping\n", c.IdleS, c.AliveAfterIdle)
	if c.ServerOpen != nil {
		fmt.Fprintf(w, "   server memory per connection: RSS %.1f KiB, Go heap+stacks %.1f KiB, %.2f goroutines (from its /metrics)\n",
			c.ServerRSSPerConn/1024, c.ServerHeapPerConn/1024, c.ServerGoroutinesPC)
	} else {
		fmt.Fprintln(w, "   server memory: not reported (no /metrics with process_resident_memory_bytes)")
	}
	fmt.Fprintf(w, "   client (this process) Go heap+stacks per connection: %.1f KiB\n", c.ClientBytesPerConn/1024)
	for _, k := range slices.Sorted(maps.Keys(c.ClosedWhyIdle)) {
		fmt.Fprintf(w, "   closed while idle: %s × %d\n", k, c.ClosedWhyIdle[k])
	}
}

func writeErrors(w io.Writer, errs map[string]int64) {
	if len(errs) == 0 {
		fmt.Fprintln(w, "   errors: none")
		return
	}
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(errs)) {
		parts = append(parts, fmt.Sprintf("%s %d", k, errs[k]))
	}
	fmt.Fprintf(w, "   errors by reason: %s\n", strings.Join(parts, ", "))
}

// writeMix prints the chat mix's counters (--picture-share,
// --action-share), nothing without them.
func writeMix(w io.Writer, r *Result) {
	c, k := r.Counts, r.Correctness
	if c.Pictures > 0 || k.PictureMismatches > 0 {
		fmt.Fprintf(w, "   pictures %d: shown with their object %d, mismatched %d\n", c.Pictures, c.PicturesReceived, k.PictureMismatches)
	}
	if c.ActionsSent > 0 {
		fmt.Fprintf(w, "   actions %d (edits %d, reactions %d, deletes %d): answered %d, refused %d, unanswered %d; notices %d of %d expected, missing %d, duplicate %d, stray %d; notices' saved ACKs to the actor %d\n",
			c.ActionsSent, c.Edits, c.Reactions, c.Deletes, c.ActionsAnswered, c.ActionsRefused, k.ActionsUnanswered,
			c.NoticesReceived, c.NoticesExpected, k.NoticesMissing, k.NoticesDuplicate, k.NoticesStray, k.NoticesSavedAcks)
	}
}
