package main

import (
	"bytes"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestBaselineGoalsMarkEachTarget: each baseline-* step's targets are met
// or not by the medians' ratios, and the report marks each with ✓ or ✗.
func TestBaselineGoalsMarkEachTarget(t *testing.T) {
	c := &CompareResult{Name: "baseline-50x10",
		A:      CompareSide{Label: "A", Median: map[string]float64{"cpu_ms_per_msg": 2.0, "accepted_p99_ms": 3.0, "delivery_p99_ms": 12.0}},
		B:      CompareSide{Label: "B", Median: map[string]float64{"cpu_ms_per_msg": 1.2, "accepted_p99_ms": 3.3, "delivery_p99_ms": 6.0}},
		Ratios: map[string]float64{"cpu_ms_per_msg": 0.6, "accepted_p99_ms": 1.1, "delivery_p99_ms": 0.5},
	}
	goals := lightLoadGoals(c)
	met := map[string]bool{}
	for _, g := range goals {
		met[g.Name] = g.Met
	}
	for name, want := range map[string]bool{
		"server + Redis + MariaDB CPU per message":    true,  // 0.60 ≤ 0.65
		"ACK p99 not above the baseline's":            false, // 1.10 > 1
		"delivery p99 (deliver after save)":           true,  // 0.50 ≤ 0.5
		"every correctness counter zero in every run": true,
	} {
		if got, ok := met[name]; !ok || got != want {
			t.Errorf("%s: met %v (present %v), want %v", name, got, ok, want)
		}
	}
	c.Targets = goals
	var b bytes.Buffer
	writeCompare(&b, c)
	out := b.String()
	if !strings.Contains(out, "✓ server + Redis + MariaDB CPU per message") || !strings.Contains(out, "✗ ACK p99 not above") {
		t.Fatalf("report lacks the marks:\n%s", out)
	}

	closed := &CompareResult{Ratios: map[string]float64{"delivered_per_s": 1.7},
		A: CompareSide{Median: map[string]float64{"delivered_per_s": 1000}}, B: CompareSide{Median: map[string]float64{"delivered_per_s": 1700}}}
	if g := groupClosedGoals(closed)[0]; g.Met {
		t.Fatalf("1.7× deliveries/s met a ≥ 1.8× target: %+v", g)
	}
	unmeasured := &CompareResult{Ratios: map[string]float64{}, A: CompareSide{Median: map[string]float64{}}, B: CompareSide{Median: map[string]float64{}}}
	if g := groupGoals(unmeasured)[0]; g.Met || !strings.Contains(g.Got, "not measured") {
		t.Fatalf("a figure no side reported counted as met: %+v", g)
	}
}

// TestCPUPerMessageSpreadsTheSendingPhase: CPU per message is the cores
// over the sending phase times its length, over the messages sent.
func TestCPUPerMessageSpreadsTheSendingPhase(t *testing.T) {
	r := &Result{Usage: Usage{Seconds: 10, ServerCores: 0.3, RedisCores: 0.1, MySQLCores: 0.1}, Counts: Counts{Messages: 5000, Delivered: 50000}}
	if got := cpuMsPer(r, allCores(r), r.Counts.Messages); got != 1.0 {
		t.Fatalf("cpu per message %v ms, want 1.0", got)
	}
	if got := cpuMsPer(r, allCores(r), r.Counts.Delivered); got != 0.1 {
		t.Fatalf("cpu per delivery %v ms, want 0.1", got)
	}
	r.Usage.ServerCores = 0
	if got := cpuMsPer(r, allCores(r), r.Counts.Messages); got != 0 {
		t.Fatalf("without the server's own CPU: %v, want 0 (unknown)", got)
	}
}

// TestServerCPUOfListedPIDs: with BENCH_REDIS_PIDS set, only the listed
// processes count (here this test's own process, which has used CPU).
func TestServerCPUOfListedPIDs(t *testing.T) {
	self := strconv.Itoa(os.Getpid())
	// Spin until the kernel has charged this process a clock tick.
	for deadline := time.Now().Add(5 * time.Second); pidCPU(self) == 0 && time.Now().Before(deadline); {
	}
	t.Setenv("BENCH_REDIS_PIDS", self)
	if serverCPU("BENCH_REDIS_PIDS", "no-such-process-name") == 0 {
		t.Fatal("the listed PID's CPU was not counted")
	}
	t.Setenv("BENCH_REDIS_PIDS", "")
	if got := serverCPU("BENCH_REDIS_PIDS", "no-such-process-name"); got != 0 {
		t.Fatalf("no PIDs and no such process: %v, want 0", got)
	}
}
