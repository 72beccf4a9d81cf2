package main

import (
	"errors"
	"log/slog"
	"runtime/debug"
	"strings"

	"github.com/KimMachineGun/automemlimit/memlimit"
)

// memLimitRatio is the share of the container's memory limit (cgroup) that
// becomes the Go runtime's soft memory limit when GOMEMLIMIT is unset: near
// the limit the collector works harder instead of the kernel killing the
// process. The collector's pace (GOGC) keeps Go's default of 100: 200 and
// 400 saved no measurable CPU and cost 1.35x and 2x the peak RSS
// (docs/deploy.md, "Garbage collector and memory").
const memLimitRatio = 0.9

// tuneMemoryLimit sets GOMEMLIMIT to memLimitRatio of the cgroup memory
// limit when the process runs in a memory-limited container and environ
// sets neither GOMEMLIMIT nor AUTOMEMLIMIT=off; elsewhere it leaves the
// runtime alone. It logs the limit in force and never fails the start.
func tuneMemoryLimit(log *slog.Logger, environ []string) {
	for _, kv := range environ {
		if strings.HasPrefix(kv, "GOMEMLIMIT=") || kv == "AUTOMEMLIMIT=off" {
			log.Info("memory limit from the environment", "gomemlimit_bytes", debug.SetMemoryLimit(-1))
			return
		}
	}
	n, err := memlimit.SetGoMemLimitWithOpts(memlimit.WithRatio(memLimitRatio), memlimit.WithProvider(memlimit.FromCgroup))
	switch {
	case errors.Is(err, memlimit.ErrNoCgroup) || errors.Is(err, memlimit.ErrCgroupsNotSupported):
		// Not in a container: no limit to follow.
	case err != nil:
		log.Warn("no memory limit: the container's could not be read", "err", err)
	case n > 0:
		log.Info("memory limit: 90% of the container's", "gomemlimit_bytes", n)
	}
}
