package streams

import (
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/nexo-im/nexo/store/storetest"
)

// TestInstallNeverSkipsUnissuedSeqs: two consecutive leases installed one
// after the other (two gateways, or an accept that saw "lease" late) extend
// the allocator instead of jumping over the first block's unissued seqs; a
// lease that is not the next block, and a retire, still move cur up.
func TestInstallNeverSkipsUnissuedSeqs(t *testing.T) {
	rdb, prefix := storetest.Redis(t)
	a := NewAccepter(rdb, NewKeys(prefix, 1), nil, 100, time.Hour)
	ctx := context.Background()
	state := func() (int64, int64) {
		v := rdb.HMGet(ctx, a.keys.Seq(0, "c"), "cur", "ceil").Val()
		cur, _ := strconv.ParseInt(fmt.Sprint(v[0]), 10, 64)
		ceil, _ := strconv.ParseInt(fmt.Sprint(v[1]), 10, 64)
		return cur, ceil
	}
	steps := []struct {
		name          string
		base, ceiling int64
		setCur        int64 // issue up to this before installing (0: leave)
		cur, ceil     int64
	}{
		{"first lease of a new conversation", 0, 100, 0, 0, 100},
		{"next block while 95 are unissued", 100, 200, 5, 5, 200},
		{"stale lower lease", 0, 100, 0, 5, 200},
		{"a block above a gap (someone took 200..250)", 250, 350, 0, 250, 350},
		{"retire above everything", 400, 400, 0, 400, 400},
	}
	for _, s := range steps {
		if s.setCur > 0 {
			rdb.HSet(ctx, a.keys.Seq(0, "c"), "cur", s.setCur)
		}
		if err := a.install(ctx, 0, "c", s.base, s.ceiling); err != nil {
			t.Fatal(err)
		}
		if cur, ceil := state(); cur != s.cur || ceil != s.ceil {
			t.Fatalf("%s: cur=%d ceil=%d, want %d %d", s.name, cur, ceil, s.cur, s.ceil)
		}
	}
}
