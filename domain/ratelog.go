package domain

import (
	"context"
	"log/slog"
	"sync/atomic"

	"golang.org/x/time/rate"
)

// RateLog writes log lines through a token bucket (golang.org/x/time/rate)
// so a failure that repeats per message cannot flood the log: at most
// burst lines at once, then perSecond lines a second. Lines over the limit
// are dropped and counted; the next line written carries
// suppressed=<lines dropped since the last one written>. It is the one
// rate-limited logger of the message path: the audit lines (Audit: one
// per level) and the stages' dead-letter and retry lines (workers) use it.
// Safe for concurrent use.
type RateLog struct {
	log     *slog.Logger
	lim     *rate.Limiter
	dropped atomic.Int64
}

// NewRateLog returns a RateLog writing to log.
func NewRateLog(log *slog.Logger, perSecond float64, burst int) *RateLog {
	return &RateLog{log: log, lim: rate.NewLimiter(rate.Limit(perSecond), burst)}
}

// Enabled reports whether a line at level would be written by the handler
// (before the rate limit): callers skip building attributes when not.
func (l *RateLog) Enabled(ctx context.Context, level slog.Level) bool {
	return l.log.Enabled(ctx, level)
}

// LogAttrs writes msg with attrs at level unless the bucket is empty.
func (l *RateLog) LogAttrs(ctx context.Context, level slog.Level, msg string, attrs ...slog.Attr) {
	n, ok := l.admit(ctx, level)
	if !ok {
		return
	}
	if n > 0 {
		attrs = append(attrs, slog.Int64("suppressed", n))
	}
	l.log.LogAttrs(ctx, level, msg, attrs...)
}

// Log is LogAttrs with alternating keys and values, as slog.Logger.Log.
func (l *RateLog) Log(ctx context.Context, level slog.Level, msg string, args ...any) {
	n, ok := l.admit(ctx, level)
	if !ok {
		return
	}
	if n > 0 {
		args = append(args, "suppressed", n)
	}
	l.log.Log(ctx, level, msg, args...)
}

// admit reports whether a line at level is written: the handler takes the
// level and the bucket has a token; a line refused by the bucket is
// counted. n is the lines dropped since the last one written, now reset.
func (l *RateLog) admit(ctx context.Context, level slog.Level) (n int64, ok bool) {
	if !l.log.Enabled(ctx, level) {
		return 0, false
	}
	if !l.lim.Allow() {
		l.dropped.Add(1)
		return 0, false
	}
	return l.dropped.Swap(0), true
}

// Error is Log at error level.
func (l *RateLog) Error(ctx context.Context, msg string, args ...any) {
	l.Log(ctx, slog.LevelError, msg, args...)
}

// Warn is Log at warn level.
func (l *RateLog) Warn(ctx context.Context, msg string, args ...any) {
	l.Log(ctx, slog.LevelWarn, msg, args...)
}

// Suppressed is the number of lines dropped since the last one written.
func (l *RateLog) Suppressed() int64 { return l.dropped.Load() }
