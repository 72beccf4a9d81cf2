package main

import (
	"io"
	"log/slog"

	"github.com/nexo-im/nexo/configs"
)

// newLogger builds the process logger from log.level and log.format
// (validated by configs: debug|info|warn|error, text|json), writing to w.
func newLogger(cfg configs.Log, w io.Writer) *slog.Logger {
	var level slog.Level
	_ = level.UnmarshalText([]byte(cfg.Level))
	opts := &slog.HandlerOptions{Level: level}
	if cfg.Format == "json" {
		return slog.New(slog.NewJSONHandler(w, opts))
	}
	return slog.New(slog.NewTextHandler(w, opts))
}
