package streams

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// Claims: which consumer holds a pending entry. A consumer keeps the
// entries it works on fresh (keepFresh, touch); an entry idle for
// ClaimMinIdle is in no one's hands and is taken again when due
// (retryDue), or at once by a take-over (reclaimIdle).

// retryScanPages bounds one retryDue round: a long pending list (a
// receiver down for a while) is scanned a slice per round, the next round
// going on where this one stopped.
const retryScanPages = 8

// retryDue claims the group's pending entries that are due — idle for
// retryIdle of their deliveries, whichever consumer holds them: a failed
// entry waiting out its backoff, or one a dead consumer left — and hands
// them to the handler, Count at a time.
func (c *Consumer) retryDue(ctx, readCtx context.Context, h Handler) {
	for page := 0; page < retryScanPages && ctx.Err() == nil && !c.fenced; page++ {
		start := c.retryFrom
		if start == "" {
			start = "-"
		}
		pending, err := c.rdb.XPendingExt(readCtx, &redis.XPendingExtArgs{
			Stream: c.cfg.Stream, Group: c.cfg.Group, Idle: c.cfg.ClaimMinIdle, Start: start, End: "+", Count: int64(c.cfg.Count),
		}).Result()
		if err != nil {
			if !errors.Is(err, redis.Nil) {
				c.log.Warn("pending scan failed", "err", err)
			}
			return
		}
		c.retryFrom = ""
		if len(pending) == c.cfg.Count {
			c.retryFrom = afterID(pending[len(pending)-1].ID)
		}
		var due []string
		for _, p := range pending {
			if p.Idle >= c.retryIdle(p.RetryCount) {
				due = append(due, p.ID)
			}
		}
		if len(due) > 0 {
			// MinIdle again: an entry another consumer took since the scan
			// is not taken from it.
			msgs, err := c.rdb.XClaim(readCtx, &redis.XClaimArgs{
				Stream: c.cfg.Stream, Group: c.cfg.Group, Consumer: c.cfg.Consumer, MinIdle: c.cfg.ClaimMinIdle, Messages: due,
			}).Result()
			if err != nil && !errors.Is(err, redis.Nil) {
				c.log.Warn("claim of due entries failed", "err", err)
				return
			}
			if msgs = liveOnly(msgs); len(msgs) > 0 {
				c.log.Debug("retrying pending entries", "count", len(msgs), "first", msgs[0].ID)
				c.process(ctx, msgs, h)
			}
		}
		if c.retryFrom == "" {
			return
		}
	}
}

// afterID is the lowest stream ID above id.
func afterID(id string) string {
	ms, seq := splitID(id)
	return fmt.Sprintf("%d-%d", ms, seq+1)
}

// reclaimIdle takes over every entry idle at least minIdle from any
// consumer (a take-over: at once, whatever its retry delay).
func (c *Consumer) reclaimIdle(ctx, readCtx context.Context, h Handler, minIdle time.Duration) {
	start := "0-0"
	for ctx.Err() == nil && !c.fenced {
		msgs, next, err := c.rdb.XAutoClaim(readCtx, &redis.XAutoClaimArgs{
			Stream: c.cfg.Stream, Group: c.cfg.Group, Consumer: c.cfg.Consumer,
			MinIdle: minIdle, Start: start, Count: int64(c.cfg.Count),
		}).Result()
		if err != nil {
			if !errors.Is(err, redis.Nil) {
				c.log.Warn("reclaim failed", "err", err)
			}
			return
		}
		if msgs = liveOnly(msgs); len(msgs) > 0 {
			c.log.Info("reclaimed idle entries", "count", len(msgs), "first", msgs[0].ID)
			c.process(ctx, msgs, h)
		}
		if next == "0-0" || next == "" {
			return
		}
		start = next
	}
}

// keepFresh touches batch every ClaimMinIdle/2 while its handler works on
// it, so that no peer takes entries still in hand (a webhook batch posting
// to a slow receiver); stop ends it. A timer, not a goroutine: most
// batches finish long before the first touch. A touch racing stop is
// harmless (XCLAIM skips acknowledged entries).
func (c *Consumer) keepFresh(ctx context.Context, batch []redis.XMessage) (stop func()) {
	if c.cfg.ClaimMinIdle <= 0 {
		return func() {}
	}
	every := c.cfg.ClaimMinIdle / 2
	var mu sync.Mutex
	var t *time.Timer
	stopped := false
	var tick func()
	tick = func() {
		c.touch(ctx, batch)
		mu.Lock()
		defer mu.Unlock()
		if !stopped {
			t = time.AfterFunc(every, tick)
		}
	}
	mu.Lock()
	t = time.AfterFunc(every, tick)
	mu.Unlock()
	return func() {
		mu.Lock()
		defer mu.Unlock()
		stopped = true
		t.Stop()
	}
}

// touchScript resets the idle time of the entries this consumer still
// holds (KEYS[1] the stream; ARGV: group, consumer, ids...) without
// counting a delivery: XCLAIM JUSTID with the entry's own RETRYCOUNT, as
// the embedded server counts every claim (Redis does not for JUSTID).
// Entries a peer took meanwhile are left to it.
var touchScript = redis.NewScript(`
for i = 3, #ARGV do
  local p = redis.call('XPENDING', KEYS[1], ARGV[1], ARGV[i], ARGV[i], 1)
  if p[1] and p[1][2] == ARGV[2] then
    redis.call('XCLAIM', KEYS[1], ARGV[1], ARGV[2], 0, ARGV[i], 'RETRYCOUNT', p[1][4], 'JUSTID')
  end
end
return 0
`)

// touch resets the idle time of entries we still hold (touchScript).
func (c *Consumer) touch(ctx context.Context, batch []redis.XMessage) {
	args := make([]any, 0, 2+len(batch))
	args = append(args, c.cfg.Group, c.cfg.Consumer)
	for _, m := range batch {
		args = append(args, m.ID)
	}
	if err := touchScript.Run(ctx, c.rdb, []string{c.cfg.Stream}, args...).Err(); err != nil && !errors.Is(err, redis.Nil) {
		c.log.Debug("touch failed", "err", err)
	}
}
