package main

import (
	"context"
	"os"
	"time"

	"golang.org/x/sys/unix"
)

// timerfdPacer sleeps on a timerfd (nanosecond timeouts) read through the
// network poller, so the wake-up is the kernel's timer, not epoll_pwait's
// millisecond timeout.
type timerfdPacer struct {
	ctx  context.Context
	fd   int
	f    *os.File
	stop func() bool
	buf  [8]byte
}

// newPacer returns a timerfd pacer, or the portable one when the kernel
// refuses a timerfd.
func newPacer(ctx context.Context) pacer {
	fd, err := unix.TimerfdCreate(unix.CLOCK_MONOTONIC, unix.TFD_NONBLOCK|unix.TFD_CLOEXEC)
	if err != nil {
		return newTimerPacer(ctx)
	}
	// A non-blocking descriptor: os.NewFile registers it with the poller
	// (f.Fd() would make it blocking again, so the pacer keeps fd).
	f := os.NewFile(uintptr(fd), "timerfd")
	p := &timerfdPacer{ctx: ctx, fd: fd, f: f}
	// A past read deadline wakes a sleep in progress and fails every later one.
	p.stop = context.AfterFunc(ctx, func() { _ = f.SetReadDeadline(time.Unix(1, 0)) })
	return p
}

func (p *timerfdPacer) sleep(d time.Duration) bool {
	if p.ctx.Err() != nil {
		return false // also where the poller could not take the timerfd and the deadline is not honoured
	}
	spec := unix.ItimerSpec{Value: unix.NsecToTimespec(max(int64(d), 1))}
	if err := unix.TimerfdSettime(p.fd, 0, &spec, nil); err != nil {
		time.Sleep(d) // late, but the run keeps its load
		return p.ctx.Err() == nil
	}
	_, err := p.f.Read(p.buf[:])
	return err == nil
}

func (p *timerfdPacer) close() {
	p.stop()
	_ = p.f.Close()
}
