package main

import (
	"context"
	"os"
	"runtime"
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
	// CPU time of the local Redis and MariaDB servers (found by process
	// name), so a report can say where the machine's time went.
	redis, mysql time.Duration
}

// clockTicks is USER_HZ, the unit of /proc/<pid>/stat times on Linux.
const clockTicks = 100

// serverCPU is the CPU time of the Redis or MariaDB servers: the processes
// listed in the environment variable env (comma-separated PIDs), when set —
// on a machine whose other Redis and MariaDB servers serve other work, the
// ones the servers under test use — else every process named one of names.
func serverCPU(env string, names ...string) time.Duration {
	list := os.Getenv(env)
	if list == "" {
		return procCPU(names...)
	}
	var total time.Duration
	for _, pid := range strings.Split(list, ",") {
		if pid = strings.TrimSpace(pid); pid != "" {
			total += pidCPU(pid)
		}
	}
	return total
}

// pidCPU is the CPU time (utime + stime) of process pid; 0 if it is gone.
func pidCPU(pid string) time.Duration {
	stat, err := os.ReadFile("/proc/" + pid + "/stat")
	if err != nil {
		return 0
	}
	// Fields after the parenthesised comm: state is field 3, utime 14, stime 15.
	_, rest, ok := strings.Cut(string(stat), ") ")
	f := strings.Fields(rest)
	if !ok || len(f) < 13 {
		return 0
	}
	ut, _ := strconv.ParseUint(f[11], 10, 64)
	st, _ := strconv.ParseUint(f[12], 10, 64)
	return time.Duration(ut+st) * time.Second / clockTicks
}

// procCPU sums the CPU time of the processes whose comm is one of names.
func procCPU(names ...string) time.Duration {
	dirs, err := os.ReadDir("/proc")
	if err != nil {
		return 0
	}
	var total time.Duration
	for _, d := range dirs {
		if d.Name()[0] < '0' || d.Name()[0] > '9' {
			continue
		}
		comm, err := os.ReadFile("/proc/" + d.Name() + "/comm")
		if err != nil {
			continue
		}
		name := strings.TrimSpace(string(comm))
		match := false
		for _, n := range names {
			match = match || name == n
		}
		if !match {
			continue
		}
		total += pidCPU(d.Name())
	}
	return total
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
	s.redis, s.mysql = serverCPU("BENCH_REDIS_PIDS", "redis-server"), serverCPU("BENCH_MYSQL_PIDS", "mariadbd", "mysqld")
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
	// RedisCores and MySQLCores are the local redis-server's and
	// mariadbd's CPU time per wall second (0 when they run elsewhere).
	RedisCores float64 `json:"redis_cores"`
	MySQLCores float64 `json:"mysql_cores"`
	// OtherCores is the rest of the machine's busy time: other processes
	// sharing it (and the kernel's work for everyone).
	OtherCores float64 `json:"other_cores"`
	// Load1Start is the one-minute load average when the run started.
	Load1Start float64 `json:"load1_start"`
	// Seconds is the sending phase's wall time, which the cores above are
	// averaged over.
	Seconds float64 `json:"seconds,omitempty"`
	// ServerCores is the server's own CPU time per wall second, from its
	// /metrics process_cpu_seconds_total (the first --url; 0 when it does
	// not report it). With --inprocess the server is this process, so the
	// load generator is included.
	ServerCores float64 `json:"server_cores,omitempty"`
	// ServerRSSBytes is the server's resident memory at the end of the
	// sending phase (process_resident_memory_bytes; 0: not reported).
	ServerRSSBytes int64 `json:"server_rss_bytes,omitempty"`
}

func usageBetween(a, b cpuSample) Usage {
	u := Usage{Load1Start: a.load1}
	if dt := b.total - a.total; dt > 0 {
		u.MachineBusyPct = round1(float64(b.busy-a.busy) / float64(dt) * 100)
	}
	if wall := b.at.Sub(a.at); wall > 0 {
		u.Seconds = round3(wall.Seconds())
		cores := func(d time.Duration) float64 { return round3(float64(d) / float64(wall)) }
		u.ProcessCores, u.RedisCores, u.MySQLCores = cores(b.self-a.self), cores(b.redis-a.redis), cores(b.mysql-a.mysql)
		busy := u.MachineBusyPct / 100 * float64(runtime.NumCPU())
		u.OtherCores = round3(max(0, busy-u.ProcessCores-u.RedisCores-u.MySQLCores))
	}
	return u
}

// waitQuiet waits, at most limit, until the whole machine has been less
// than busyPct busy for three consecutive one-second samples (this process
// is idle between steps, so what it sees is everyone else). It returns how
// long it waited and the last sample's busy share.
func waitQuiet(ctx context.Context, limit time.Duration, busyPct float64) (time.Duration, float64) {
	start := time.Now()
	quiet, last := 0, 0.0
	prev := sampleCPU()
	for quiet < 3 && time.Since(start) < limit && ctx.Err() == nil {
		time.Sleep(time.Second)
		cur := sampleCPU()
		last = usageBetween(prev, cur).MachineBusyPct
		prev = cur
		if last < busyPct {
			quiet++
		} else {
			quiet = 0
		}
	}
	return time.Since(start), last
}
