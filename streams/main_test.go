package streams_test

import (
	"os"
	"testing"

	"github.com/nexo-im/nexo/store/redistest"
)

// TestMain stops the Redis Cluster and Sentinel topologies the tests start.
func TestMain(m *testing.M) { os.Exit(redistest.Main(m)) }
