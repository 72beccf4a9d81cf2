package app

import (
	"log/slog"
	"os"
	"testing"

	"github.com/cloudwego/hertz/pkg/common/hlog"

	"github.com/nexo-im/nexo/gateway"
	"github.com/nexo-im/nexo/store/redistest"
)

func TestMain(m *testing.M) {
	// Hertz's logger is process-wide; set it once, before any server.
	hlog.SetLogger(gateway.HertzLogger(slog.New(slog.DiscardHandler)))
	// redistest.Main stops the Redis Cluster and Sentinel the topology
	// tests start.
	os.Exit(redistest.Main(m))
}

// validSecret is a JWT secret of the minimum accepted length.
const validSecret = "0123456789abcdef0123456789abcdef"
