package testenv

import (
	"fmt"
	"os"
	"slices"
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

// ProcessCPU is the CPU time processes have used so far, by a name the caller gives them (a
// cluster and command, or a command).
type ProcessCPU map[string]time.Duration

// Add adds the CPU time of each of pids under prefix followed by its command name (those that
// ended count nothing); a pid listed twice counts once.
func (c ProcessCPU) Add(prefix string, pids []int) {
	seen := map[int]bool{}
	for _, pid := range pids {
		if seen[pid] {
			continue
		}
		seen[pid] = true
		if st, err := ReadProcStat(pid); err == nil {
			c[prefix+st.Name] += st.CPU
		}
	}
}

// Since is what each name used after before.
func (c ProcessCPU) Since(before ProcessCPU) ProcessCPU {
	out := ProcessCPU{}
	for name, d := range c {
		out[name] = d - before[name]
	}
	return out
}

// Total is the CPU time of every name.
func (c ProcessCPU) Total() time.Duration {
	var total time.Duration
	for _, d := range c {
		total += d
	}
	return total
}

// String lists the names, most CPU first, after the total.
func (c ProcessCPU) String() string {
	names := make([]string, 0, len(c))
	for name := range c {
		names = append(names, name)
	}
	slices.SortFunc(names, func(a, b string) int { return int(c[b] - c[a]) })
	parts := []string{fmt.Sprintf("%.1f s in all", c.Total().Seconds())}
	for _, name := range names {
		parts = append(parts, fmt.Sprintf("%s %.1f s", name, c[name].Seconds()))
	}
	return strings.Join(parts, ", ")
}
