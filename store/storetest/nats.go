package storetest

import (
	"net"
	"os"
	"strings"
	"testing"
	"time"
)

// EnvNATS names the test NATS server (default nats://127.0.0.1:4222).
const EnvNATS = "NEXO_TEST_NATS_URL"

// NATS returns the URL of the test NATS server (with JetStream), or
// fails/skips when nothing listens there.
func NATS(t testing.TB) string {
	t.Helper()
	url := "nats://127.0.0.1:4222"
	if v := os.Getenv(EnvNATS); v != "" {
		url = v
	}
	c, err := net.DialTimeout("tcp", strings.TrimPrefix(url, "nats://"), 2*time.Second)
	if err != nil {
		unavailable(t, "NATS", EnvNATS, "nats://127.0.0.1:4222", err)
	}
	_ = c.Close()
	return url
}
