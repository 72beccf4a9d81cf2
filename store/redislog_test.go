package store_test

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"testing"

	"github.com/nexo-im/nexo/store"
)

// TestRedisLoggerWritesStructuredLines: a go-redis Printf line comes out as
// one JSON record at warn level, tagged with its component.
func TestRedisLoggerWritesStructuredLines(t *testing.T) {
	var buf bytes.Buffer
	l := store.NewRedisLogger(slog.New(slog.NewJSONHandler(&buf, nil)))
	var _ interface {
		Printf(context.Context, string, ...any)
	} = l
	l.Printf(context.Background(), "redis: %s:%d: connection pool: failed to dial\n", "127.0.0.1", 1)
	var rec map[string]any
	if err := json.Unmarshal(bytes.TrimSpace(buf.Bytes()), &rec); err != nil {
		t.Fatalf("not one JSON line: %q (%v)", buf.String(), err)
	}
	if rec["level"] != "WARN" || rec["component"] != "go-redis" || rec["msg"] != "redis: 127.0.0.1:1: connection pool: failed to dial" {
		t.Errorf("record = %v", rec)
	}
}
