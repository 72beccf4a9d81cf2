package workers

import (
	"context"
	"log/slog"
	"strings"
	"testing"
)

// TestDeadLinesRateLimited: a burst of dead-letter lines is cut to the
// limiter's burst; the rest are counted for the next line that passes.
func TestDeadLinesRateLimited(t *testing.T) {
	var b strings.Builder
	l := newDeadLines(slog.New(slog.NewTextHandler(&b, nil)))
	for range 1000 {
		l.Error(context.Background(), "save failed permanently: dead-lettered")
	}
	if n := strings.Count(b.String(), "dead-lettered"); n < 10 || n > 11 {
		t.Fatalf("%d lines for 1000 dead letters, want the burst of 10", n)
	}
	if s := l.Suppressed(); s < 980 {
		t.Fatalf("suppressed %d", s)
	}
}
