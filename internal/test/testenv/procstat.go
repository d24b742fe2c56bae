package testenv

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// ProcStat is what /proc says of one process: its command name, resident memory and the CPU
// time (user and system) it has used so far.
type ProcStat struct {
	// Name is the command name (the second field of /proc/<pid>/stat).
	Name string
	// RSSKiB is the resident set size (VmRSS), in KiB.
	RSSKiB int64
	// CPU is the user and system CPU time used so far.
	CPU time.Duration
}

// ReadProcStat reads pid's ProcStat from /proc (Linux).
func ReadProcStat(pid int) (ProcStat, error) {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return ProcStat{}, fmt.Errorf("reading process %d's stat: %w", pid, err)
	}
	// The command name is in parentheses and may hold spaces: the fields after it are fixed.
	open, closing := strings.IndexByte(string(stat), '('), strings.LastIndexByte(string(stat), ')')
	if open < 0 || closing < open {
		return ProcStat{}, fmt.Errorf("process %d's stat %q has no command name", pid, stat)
	}
	f := strings.Fields(string(stat[closing+1:]))
	if len(f) < 13 {
		return ProcStat{}, fmt.Errorf("process %d's stat %q is short", pid, stat)
	}
	utime, err1 := strconv.ParseInt(f[11], 10, 64)
	stime, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return ProcStat{}, fmt.Errorf("process %d's stat %q: utime or stime is not a number", pid, stat)
	}
	// utime and stime are in clock ticks, 100 per second on Linux.
	out := ProcStat{Name: string(stat[open+1 : closing]), CPU: time.Duration(utime+stime) * 10 * time.Millisecond}
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return ProcStat{}, fmt.Errorf("reading process %d's status: %w", pid, err)
	}
	for _, line := range strings.Split(string(status), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			if fields := strings.Fields(rest); len(fields) > 0 {
				out.RSSKiB, _ = strconv.ParseInt(fields[0], 10, 64)
			}
		}
	}
	return out, nil
}

// ProcessesRSSKiB is the resident memory of pids together, in KiB: those that ended count nothing.
func ProcessesRSSKiB(pids []int) int64 {
	var total int64
	for _, pid := range pids {
		if s, err := ReadProcStat(pid); err == nil {
			total += s.RSSKiB
		}
	}
	return total
}
