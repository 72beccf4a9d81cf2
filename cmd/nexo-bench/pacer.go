package main

import (
	"context"
	"time"
)

// A pacer sleeps an open-loop sender until its next message is due. Go's
// timers are not precise enough for that on an idle Linux process: the
// runtime waits for them in epoll_pwait, whose timeout is in whole
// milliseconds, so a timer fires up to 1 ms late (measured here: p50 0.68
// ms, p99 1.13 ms for 2 ms sleeps), and an open loop measures latency from
// the due time — the generator's lateness was counted as the server's. On
// Linux the pacer is a timerfd waited on through the network poller
// (p50 0.09 ms, p99 0.19 ms); elsewhere a time.Timer.
type pacer interface {
	// sleep waits d and reports whether it did: false once ctx (given to
	// newPacer) is done.
	sleep(d time.Duration) bool
	close()
}

// timerPacer is the portable pacer: a time.Timer.
type timerPacer struct {
	ctx context.Context
	t   *time.Timer
}

func newTimerPacer(ctx context.Context) *timerPacer {
	return &timerPacer{ctx: ctx, t: time.NewTimer(time.Hour)}
}

func (p *timerPacer) sleep(d time.Duration) bool {
	p.t.Reset(d)
	select {
	case <-p.ctx.Done():
		return false
	case <-p.t.C:
		return true
	}
}

func (p *timerPacer) close() { p.t.Stop() }
