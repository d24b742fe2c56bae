package memlimit

import (
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"testing"
)

// TestContainerLimit: cgroup v2's number or "max", v1's number or its huge "no limit", the
// first file that exists, and a clear error for garbage.
func TestContainerLimit(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	missing := filepath.Join(dir, "missing")
	for _, tc := range []struct {
		name  string
		files []string
		want  int64
		err   string
	}{
		{"v2 limit", []string{write("v2", "536870912\n")}, 536870912, ""},
		{"v2 max", []string{write("v2max", "max\n")}, 0, ""},
		{"v1 after a missing v2", []string{missing, write("v1", "268435456\n")}, 268435456, ""},
		{"v1 unlimited", []string{missing, write("v1max", "9223372036854771712\n")}, 0, ""},
		{"none", []string{missing}, 0, ""},
		{"garbage", []string{write("bad", "lots\n")}, 0, `"lots" is not a number of bytes`},
	} {
		got, err := containerLimit(tc.files)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%s: error %v, want one saying %q", tc.name, err, tc.err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("%s: %d, %v; want %d", tc.name, got, err, tc.want)
		}
	}
}

// TestSet: the runtime's soft limit becomes Share of the container's; GOMEMLIMIT wins.
func TestSet(t *testing.T) {
	before := debug.SetMemoryLimit(-1)
	t.Cleanup(func() { debug.SetMemoryLimit(before) })
	cgroupFiles = []string{filepath.Join(t.TempDir(), "memory.max")}
	if err := os.WriteFile(cgroupFiles[0], []byte("1000000000\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("GOMEMLIMIT", "")
	got, err := Set()
	if err != nil || got != 900000000 || debug.SetMemoryLimit(-1) != 900000000 {
		t.Errorf("Set: %d, %v, runtime limit %d; want 900000000", got, err, debug.SetMemoryLimit(-1))
	}
	debug.SetMemoryLimit(before)
	t.Setenv("GOMEMLIMIT", "100MiB")
	if got, err := Set(); err != nil || got != 0 || debug.SetMemoryLimit(-1) != before {
		t.Errorf("Set with GOMEMLIMIT: %d, %v, runtime limit %d; want it left to the runtime", got, err, debug.SetMemoryLimit(-1))
	}
}
