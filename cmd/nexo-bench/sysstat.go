package main

import (
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// cpuSample is the machine's and this process's CPU time at one moment,
// so a report can say how busy the shared machine was while it measured.
type cpuSample struct {
	busy, total uint64 // /proc/stat jiffies, all CPUs
	self        time.Duration
	at          time.Time
	load1       float64
}

func sampleCPU() cpuSample {
	s := cpuSample{at: time.Now()}
	if b, err := os.ReadFile("/proc/stat"); err == nil {
		line, _, _ := strings.Cut(string(b), "\n")
		f := strings.Fields(line)
		for i, v := range f[1:] {
			n, _ := strconv.ParseUint(v, 10, 64)
			s.total += n
			if i != 3 && i != 4 { // idle, iowait
				s.busy += n
			}
		}
	}
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) == nil {
		s.self = time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	if b, err := os.ReadFile("/proc/loadavg"); err == nil {
		f := strings.Fields(string(b))
		if len(f) > 0 {
			s.load1, _ = strconv.ParseFloat(f[0], 64)
		}
	}
	return s
}

// Usage is how busy the machine was during a run.
type Usage struct {
	// MachineBusyPct is the share of all CPUs' time not idle, 0-100.
	MachineBusyPct float64 `json:"machine_busy_pct"`
	// ProcessCores is this process's CPU time per wall second (with
	// --inprocess: server and load generator together).
	ProcessCores float64 `json:"process_cores"`
	// Load1Start is the one-minute load average when the run started.
	Load1Start float64 `json:"load1_start"`
}

func usageBetween(a, b cpuSample) Usage {
	u := Usage{Load1Start: a.load1}
	if dt := b.total - a.total; dt > 0 {
		u.MachineBusyPct = round1(float64(b.busy-a.busy) / float64(dt) * 100)
	}
	if wall := b.at.Sub(a.at); wall > 0 {
		u.ProcessCores = round3(float64(b.self-a.self) / float64(wall))
	}
	return u
}
