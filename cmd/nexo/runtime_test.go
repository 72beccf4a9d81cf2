package main

import (
	"log/slog"
	"math"
	"os"
	"runtime/debug"
	"strconv"
	"strings"
	"testing"
)

// TestMemoryLimitFollowsTheContainer: GOMEMLIMIT or AUTOMEMLIMIT=off in
// the environment leave the runtime's limit alone; otherwise the limit is
// 90 % of the cgroup's memory.max when there is one, and none without.
func TestMemoryLimitFollowsTheContainer(t *testing.T) {
	before := debug.SetMemoryLimit(-1)
	t.Cleanup(func() { debug.SetMemoryLimit(before) })
	if _, set := os.LookupEnv("GOMEMLIMIT"); set {
		t.Skip("GOMEMLIMIT is set for this test process")
	}
	log := slog.New(slog.DiscardHandler)

	debug.SetMemoryLimit(math.MaxInt64)
	for _, env := range [][]string{{"GOMEMLIMIT=1GiB"}, {"AUTOMEMLIMIT=off"}} {
		tuneMemoryLimit(log, env)
		if got := debug.SetMemoryLimit(-1); got != math.MaxInt64 {
			t.Fatalf("with %v the limit became %d", env, got)
		}
	}

	tuneMemoryLimit(log, nil)
	got := debug.SetMemoryLimit(-1)
	raw, err := os.ReadFile("/sys/fs/cgroup/memory.max")
	max, perr := strconv.ParseInt(strings.TrimSpace(string(raw)), 10, 64)
	switch {
	case err == nil && perr == nil:
		if want := int64(float64(max) * memLimitRatio); got != want {
			t.Fatalf("limit %d in a container limited to %d, want %d", got, max, want)
		}
	default: // no cgroup v2 limit ("max", or not cgroup v2)
		if _, err := os.Stat("/sys/fs/cgroup/memory/memory.limit_in_bytes"); err == nil {
			t.Skip("cgroup v1: its limit is not checked here")
		}
		if got != math.MaxInt64 {
			t.Fatalf("no container limit, yet the memory limit became %d", got)
		}
	}
}
