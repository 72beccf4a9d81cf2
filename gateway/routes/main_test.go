package routes_test

import (
	"log/slog"
	"os"
	"testing"

	"github.com/cloudwego/hertz/pkg/common/hlog"

	"github.com/nexo-im/nexo/gateway"
)

var quiet = slog.New(slog.DiscardHandler)

func TestMain(m *testing.M) {
	// Hertz's logger is process-wide; set it once, before any server.
	hlog.SetLogger(gateway.HertzLogger(slog.New(slog.DiscardHandler)))
	os.Exit(m.Run())
}

// must(f())(t) returns f's value and fails t on f's error.
func must[T any](v T, err error) func(t testing.TB) T {
	return func(t testing.TB) T {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
}
