package app

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/nexo-im/nexo/configs"
)

// An idle process with garbage in its heap releases it once; a busy one
// (allocating more than the threshold between checks) never does.
func TestIdleReleaserReleasesOnlyWhenIdle(t *testing.T) {
	r := newIdleReleaser(configs.Memory{IdleRelease: time.Second, IdleAllocBytes: 1 << 20}, prometheus.NewRegistry(),
		slog.New(slog.NewTextHandler(io.Discard, nil)))
	if r.idle(2<<20, 64<<20) {
		t.Fatal("2 MiB allocated since the last check counts as idle with a 1 MiB threshold")
	}
	if r.idle(0, 512<<10) {
		t.Fatal("a release with only 512 KiB to return")
	}
	if !r.idle(0, 64<<20) {
		t.Fatal("no release for an idle process holding 64 MiB unused")
	}
	if newIdleReleaser(configs.Memory{}, nil, nil) != nil {
		t.Fatal("memory.idle_release 0 still releases")
	}

	// The loop: garbage left behind, then nothing allocated; a check
	// releases it (the counter moves) and the heap's retained bytes fall.
	r.every = 20 * time.Millisecond
	garbage := make([][]byte, 0, 64)
	for range 64 {
		garbage = append(garbage, make([]byte, 1<<20))
	}
	garbage = nil
	_ = garbage
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.run(ctx) }()
	deadline := time.Now().Add(10 * time.Second)
	for testutil.ToFloat64(r.released) == 0 {
		if time.Now().After(deadline) {
			cancel()
			t.Fatal("an idle process with 64 MiB of garbage never released it")
		}
		<-time.After(10 * time.Millisecond)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if v := r.read(); v[1]+v[2] > 32<<20 {
		t.Fatalf("after the release %d bytes of heap remain retained unused", v[1]+v[2])
	}
}
