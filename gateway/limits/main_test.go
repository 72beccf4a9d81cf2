package limits

import (
	"os"
	"testing"

	"github.com/nexo-im/nexo/store/redistest"
)

// TestMain stops the Redis Sentinel topology the tests start.
func TestMain(m *testing.M) { os.Exit(redistest.Main(m)) }
