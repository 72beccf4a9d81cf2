package storetest

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// LocalProcess returns the PID of a process on this machine whose command
// name is one of names (/proc/PID/comm), or 0 when there is none or no
// /proc: benchmarks use it to report a local server's CPU per operation.
func LocalProcess(names ...string) int {
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	for _, d := range dirs {
		comm, err := os.ReadFile(filepath.Join(d, "comm"))
		if err != nil {
			continue
		}
		for _, n := range names {
			if strings.TrimSpace(string(comm)) == n {
				pid, _ := strconv.Atoi(filepath.Base(d))
				return pid
			}
		}
	}
	return 0
}

// ProcessCPU is the user+system CPU time process pid has used
// (/proc/PID/stat, in clock ticks of 10 ms), or 0 when it cannot be read.
func ProcessCPU(pid int) time.Duration {
	if pid <= 0 {
		return 0
	}
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0
	}
	// The command name may hold spaces: fields count from after its ')'.
	s := string(stat)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(f) < 13 {
		return 0
	}
	utime, _ := strconv.ParseInt(f[11], 10, 64)
	stime, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(utime+stime) * 10 * time.Millisecond
}
