package app

import (
	"log/slog"
	"os"
	"testing"

	"github.com/cloudwego/hertz/pkg/common/hlog"

	"github.com/nexo-im/nexo/gateway"
)

func TestMain(m *testing.M) {
	// Hertz's logger is process-wide; set it once, before any server.
	hlog.SetLogger(gateway.HertzLogger(slog.New(slog.DiscardHandler)))
	os.Exit(m.Run())
}

// validSecret is a JWT secret of the minimum accepted length.
const validSecret = "0123456789abcdef0123456789abcdef"
