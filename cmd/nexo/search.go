package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"strconv"
	"time"

	"github.com/schollz/progressbar/v3"

	"github.com/nexo-im/nexo/cmd/app"
)

// defaultReindexBatch is how many stored messages one reindex step reads
// and writes (one query, then one insert per 200 searchable messages).
const defaultReindexBatch = 1000

// sinceFlag is --since: a time as Unix milliseconds (all digits) or RFC
// 3339, held as Unix ms; 0 when not set.
type sinceFlag struct{ ms int64 }

func (f *sinceFlag) String() string {
	if f == nil || f.ms == 0 {
		return ""
	}
	return strconv.FormatInt(f.ms, 10)
}

// Set parses s as Unix milliseconds or RFC 3339 (2024-05-01T00:00:00Z).
func (f *sinceFlag) Set(s string) error {
	if ms, err := strconv.ParseInt(s, 10, 64); err == nil {
		if ms < 0 {
			return fmt.Errorf("must not be negative")
		}
		f.ms = ms
		return nil
	}
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		return fmt.Errorf("want Unix milliseconds or an RFC 3339 time such as 2024-05-01T00:00:00Z")
	}
	f.ms = t.UnixMilli()
	return nil
}

func reindexFlags(fs *flag.FlagSet) {
	fs.Var(&sinceFlag{}, "since", "only messages sent at or after this time: Unix milliseconds or RFC 3339 (2024-05-01T00:00:00Z); default all")
	fs.Int("batch", defaultReindexBatch, "messages read and indexed per step (progress is saved after each)")
}

// reindexCmd fills the message search table from the messages table
// (app.Reindex), with a progress bar on stderr, and prints what it did.
// Interrupted (SIGINT), it keeps its progress: run it again with the same
// --since to resume.
func reindexCmd(ctx context.Context, inv invocation) error {
	since := inv.flags.Lookup("since").Value.(*sinceFlag).ms
	batch, err := strconv.Atoi(inv.flags.Lookup("batch").Value.String())
	if err != nil || batch < 1 {
		return fmt.Errorf("--batch must be >= 1")
	}
	bar := &reindexBar{w: inv.stderr}
	backend, res, err := app.Reindex(ctx, inv.cfg, inv.logger, since, batch, bar)
	bar.stop()
	if res.ResumedAfter > 0 {
		fmt.Fprintf(inv.stdout, "resumed after message id %d\n", res.ResumedAfter)
	}
	if err != nil {
		if ctx.Err() != nil {
			fmt.Fprintf(inv.stdout, "stopped after %d messages read (%d searchable); run it again with the same --since to resume\n",
				res.Read, res.Indexed)
		}
		return err
	}
	_, err = fmt.Fprintf(inv.stdout, "reindexed: %d messages read, %d searchable written to the index (%s)\n",
		res.Read, res.Indexed, backend)
	return err
}

// reindexBar shows the reindex's progress (search.ReindexProgress) as a
// progress bar, made once the total is known.
type reindexBar struct {
	w   io.Writer
	bar *progressbar.ProgressBar
}

// Start implements search.ReindexProgress; with nothing to read there
// is no bar.
func (b *reindexBar) Start(total int64) {
	if total == 0 {
		return
	}
	b.bar = progressbar.NewOptions64(total,
		progressbar.OptionSetWriter(b.w),
		progressbar.OptionSetDescription("reindex"),
		progressbar.OptionSetItsString("msg"),
		progressbar.OptionShowCount(),
		progressbar.OptionShowIts(),
		progressbar.OptionSetPredictTime(true),
		progressbar.OptionThrottle(200*time.Millisecond),
		progressbar.OptionSetWidth(30))
}

// Add implements search.ReindexProgress.
func (b *reindexBar) Add(n int) {
	if b.bar != nil {
		_ = b.bar.Add(n)
	}
}

// stop leaves the bar as it is and ends its line.
func (b *reindexBar) stop() {
	if b.bar == nil {
		return
	}
	_ = b.bar.Exit()
	fmt.Fprintln(b.w)
}
