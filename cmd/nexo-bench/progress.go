package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"time"
)

// startProgress prints a progress line every second (overwritten in place
// on a terminal, every five seconds as a new line otherwise) until the
// returned stop is called. Rates are per second since the previous line.
func startProgress(ctx context.Context, w io.Writer, quiet bool, label string, clk *clock, rec *recorder, start, from, end int64) (stop func()) {
	if quiet {
		return func() {}
	}
	tty := isTerminal(w)
	every := time.Second
	if !tty {
		every = 5 * time.Second
	}
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(every)
		defer t.Stop()
		prev, prevAt := rec.progress(), time.Now()
		for {
			select {
			case <-ctx.Done():
				if tty {
					fmt.Fprintln(w)
				}
				return
			case <-t.C:
			}
			p, now := rec.progress(), time.Now()
			secs := now.Sub(prevAt).Seconds()
			rate := func(a, b int64) float64 { return float64(a-b) / secs }
			at := clk.now()
			var phase string
			switch {
			case at < from:
				phase = fmt.Sprintf("warm-up %4.1fs", float64(from-at)/1e9)
			case at < end:
				phase = fmt.Sprintf("%5.1f/%.0fs", float64(at-from)/1e9, float64(end-from)/1e9)
			default:
				phase = fmt.Sprintf("draining %4.1fs", float64(at-end)/1e9)
			}
			line := fmt.Sprintf("%s [%s] sent %6.0f/s  accepted %6.0f/s  saved %6.0f/s  delivered %6.0f/s  outstanding %5d  errors %d",
				label, phase, rate(p.sent, prev.sent), rate(p.accepted, prev.accepted), rate(p.saved, prev.saved),
				rate(p.delivered, prev.delivered), p.outstanding, p.errors)
			if tty {
				fmt.Fprintf(w, "\r%-150s", line)
			} else {
				fmt.Fprintln(w, line)
			}
			prev, prevAt = p, now
		}
	}()
	return func() { cancel(); <-done }
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}
