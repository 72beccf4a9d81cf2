package gateway

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"

	"github.com/cloudwego/hertz/pkg/common/hlog"
)

// HertzLogger adapts logger to Hertz's logger interface, so Hertz's own
// messages (listening, shutdown, connection errors) go through slog like the
// rest of Nexo. Install it once at start, before any server exists:
// hlog.SetLogger(gateway.HertzLogger(logger)) — Hertz's logger is
// process-wide and not safe to swap while serving. Trace and debug map to
// slog debug, notice to info, fatal to error followed by exit(1) (Hertz's
// contract for Fatal). SetLevel and SetOutput are no-ops: slog's handler
// decides.
func HertzLogger(logger *slog.Logger) hlog.FullLogger {
	return &hertzLogger{l: logger.With("component", "hertz")}
}

type hertzLogger struct{ l *slog.Logger }

func (h *hertzLogger) log(ctx context.Context, level slog.Level, msg string) {
	h.l.Log(ctx, level, strings.TrimSpace(msg))
}

func (h *hertzLogger) logf(ctx context.Context, level slog.Level, format string, v ...any) {
	if h.l.Enabled(ctx, level) {
		h.log(ctx, level, fmt.Sprintf(format, v...))
	}
}

func (h *hertzLogger) Trace(v ...any)  { h.log(context.Background(), slog.LevelDebug, fmt.Sprint(v...)) }
func (h *hertzLogger) Debug(v ...any)  { h.log(context.Background(), slog.LevelDebug, fmt.Sprint(v...)) }
func (h *hertzLogger) Info(v ...any)   { h.log(context.Background(), slog.LevelInfo, fmt.Sprint(v...)) }
func (h *hertzLogger) Notice(v ...any) { h.log(context.Background(), slog.LevelInfo, fmt.Sprint(v...)) }
func (h *hertzLogger) Warn(v ...any)   { h.log(context.Background(), slog.LevelWarn, fmt.Sprint(v...)) }
func (h *hertzLogger) Error(v ...any)  { h.log(context.Background(), slog.LevelError, fmt.Sprint(v...)) }
func (h *hertzLogger) Fatal(v ...any) {
	h.log(context.Background(), slog.LevelError, fmt.Sprint(v...))
	os.Exit(1)
}

func (h *hertzLogger) Tracef(f string, v ...any) {
	h.logf(context.Background(), slog.LevelDebug, f, v...)
}
func (h *hertzLogger) Debugf(f string, v ...any) {
	h.logf(context.Background(), slog.LevelDebug, f, v...)
}
func (h *hertzLogger) Infof(f string, v ...any) {
	h.logf(context.Background(), slog.LevelInfo, f, v...)
}
func (h *hertzLogger) Noticef(f string, v ...any) {
	h.logf(context.Background(), slog.LevelInfo, f, v...)
}
func (h *hertzLogger) Warnf(f string, v ...any) {
	h.logf(context.Background(), slog.LevelWarn, f, v...)
}
func (h *hertzLogger) Errorf(f string, v ...any) {
	h.logf(context.Background(), slog.LevelError, f, v...)
}
func (h *hertzLogger) Fatalf(f string, v ...any) {
	h.logf(context.Background(), slog.LevelError, f, v...)
	os.Exit(1)
}

func (h *hertzLogger) CtxTracef(ctx context.Context, f string, v ...any) {
	h.logf(ctx, slog.LevelDebug, f, v...)
}
func (h *hertzLogger) CtxDebugf(ctx context.Context, f string, v ...any) {
	h.logf(ctx, slog.LevelDebug, f, v...)
}
func (h *hertzLogger) CtxInfof(ctx context.Context, f string, v ...any) {
	h.logf(ctx, slog.LevelInfo, f, v...)
}
func (h *hertzLogger) CtxNoticef(ctx context.Context, f string, v ...any) {
	h.logf(ctx, slog.LevelInfo, f, v...)
}
func (h *hertzLogger) CtxWarnf(ctx context.Context, f string, v ...any) {
	h.logf(ctx, slog.LevelWarn, f, v...)
}
func (h *hertzLogger) CtxErrorf(ctx context.Context, f string, v ...any) {
	h.logf(ctx, slog.LevelError, f, v...)
}
func (h *hertzLogger) CtxFatalf(ctx context.Context, f string, v ...any) {
	h.logf(ctx, slog.LevelError, f, v...)
	os.Exit(1)
}

func (h *hertzLogger) SetLevel(hlog.Level) {}
func (h *hertzLogger) SetOutput(io.Writer) {}
