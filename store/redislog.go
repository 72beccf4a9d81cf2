package store

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
)

// RedisLogger routes go-redis's internal log lines (pool and reconnect
// messages, written with Printf) through slog at warn level, so they come out
// in the process's log format (JSON included) instead of plain text on
// stderr. go-redis keeps one logger for the whole process (redis.SetLogger is
// global, a library constraint): cmd installs it once, before any client.
type RedisLogger struct{ log *slog.Logger }

// NewRedisLogger returns the adapter writing to log.
func NewRedisLogger(log *slog.Logger) *RedisLogger {
	return &RedisLogger{log: log.With("component", "go-redis")}
}

// Printf implements go-redis's internal.Logging.
func (l *RedisLogger) Printf(ctx context.Context, format string, v ...any) {
	l.log.WarnContext(ctx, strings.TrimRight(fmt.Sprintf(format, v...), "\n"))
}
