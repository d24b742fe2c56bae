package testenv

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// cniResultsDir is where libcni (in containerd) caches CNI results, machine-wide.
const cniResultsDir = "/var/lib/cni/results"

// cgroupRoot is the node's kubelet cgroup root, in every cgroup hierarchy.
func (n *RealNode) cgroupRoot() string { return "/" + linkPrefix + strconv.Itoa(n.net.index) }

// cgroupMounts returns the mount points of the cgroup hierarchies (v1 and v2).
func cgroupMounts(v1Only bool) ([]string, error) {
	mounts, err := readMountinfo()
	if err != nil {
		return nil, err
	}
	var dirs []string
	for _, m := range mounts {
		if m.fstype == "cgroup" || (!v1Only && m.fstype == "cgroup2") {
			dirs = append(dirs, m.point)
		}
	}
	return dirs, nil
}

// makeCgroups creates the node's cgroup root in every v1 hierarchy (kubelet requires it to
// exist), with the machine's CPUs and memory nodes in cpuset.
func (n *RealNode) makeCgroups() error {
	mounts, err := cgroupMounts(true)
	if err != nil {
		return fmt.Errorf("real node %s: %w", n.Name, err)
	}
	for _, m := range mounts {
		dir := filepath.Join(m, n.cgroupRoot())
		if err := os.Mkdir(dir, 0o750); err != nil && !os.IsExist(err) {
			return fmt.Errorf("real node %s: creating cgroup %s: %w", n.Name, dir, err)
		}
		for _, f := range []string{"cpuset.cpus", "cpuset.mems"} {
			data, err := os.ReadFile(filepath.Join(m, f))
			if err != nil {
				continue // not the cpuset hierarchy
			}
			if err := os.WriteFile(filepath.Join(dir, f), data, 0o644); err != nil {
				return fmt.Errorf("real node %s: writing %s: %w", n.Name, filepath.Join(dir, f), err)
			}
		}
	}
	return nil
}

// cgroupDirs returns the node's cgroup folders, deepest first.
func (n *RealNode) cgroupDirs() []string {
	mounts, _ := cgroupMounts(false)
	var dirs []string
	for _, m := range mounts {
		_ = filepath.WalkDir(filepath.Join(m, n.cgroupRoot()), func(p string, d os.DirEntry, err error) error {
			if err == nil && d.IsDir() {
				dirs = append(dirs, p)
			}
			return nil
		})
	}
	slices.SortFunc(dirs, func(a, b string) int { return strings.Count(b, "/") - strings.Count(a, "/") })
	return dirs
}

// cgroupProcs returns the processes in the node's cgroups: the pods' containers.
func (n *RealNode) cgroupProcs() []int {
	seen := map[int]bool{}
	var pids []int
	for _, d := range n.cgroupDirs() {
		data, err := os.ReadFile(filepath.Join(d, "cgroup.procs"))
		if err != nil {
			continue
		}
		for _, f := range strings.Fields(string(data)) {
			if pid, err := strconv.Atoi(f); err == nil && !seen[pid] {
				seen[pid] = true
				pids = append(pids, pid)
			}
		}
	}
	return pids
}

// sandboxNetns returns the pods' network namespaces as containerd records them (best effort:
// nothing when containerd does not answer).
func (n *RealNode) sandboxNetns(ctx context.Context) []string {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	ids, err := n.ctr(ctx, "containers", "list", "--quiet")
	if err != nil {
		return nil
	}
	var paths []string
	for _, id := range strings.Fields(ids) {
		out, err := n.ctr(ctx, "containers", "info", id)
		if err != nil {
			continue
		}
		var info struct {
			Spec struct {
				Linux struct {
					Namespaces []struct{ Type, Path string } `json:"namespaces"`
				} `json:"linux"`
			} `json:"Spec"`
		}
		if json.Unmarshal([]byte(out), &info) != nil {
			continue
		}
		for _, ns := range info.Spec.Linux.Namespaces {
			if ns.Type == "network" && (strings.HasPrefix(ns.Path, "/var/run/netns/") || strings.HasPrefix(ns.Path, netnsDir+"/")) {
				paths = append(paths, filepath.Join(netnsDir, filepath.Base(ns.Path)))
			}
		}
	}
	return paths
}

// netnsOf adds to n.podNetns the files under /run/netns that hold the network namespace of
// one of pids.
func (n *RealNode) netnsOf(pids []int) {
	inodes := map[uint64]bool{}
	for _, pid := range pids {
		var st syscall.Stat_t
		if syscall.Stat(fmt.Sprintf("/proc/%d/ns/net", pid), &st) == nil {
			inodes[st.Ino] = true
		}
	}
	entries, _ := os.ReadDir(netnsDir)
	for _, e := range entries {
		p := filepath.Join(netnsDir, e.Name())
		var st syscall.Stat_t
		if p != n.net.path() && syscall.Stat(p, &st) == nil && inodes[st.Ino] {
			n.podNetns = append(n.podNetns, p)
		}
	}
}

// sweep removes what the node's stopped processes leave: the pods' processes (in its cgroups)
// and containerd's shims are killed; mounts under the node's folder and the pods' network
// namespaces are unmounted and the namespaces' files removed; its cgroups and libcni's cached
// results of its network are removed.
func (n *RealNode) sweep(ctx context.Context) error {
	var errs []error
	n.netnsOf(n.cgroupProcs())
	n.containers = append(n.containers, n.cgroupContainers()...)
	// n.Dir+"/": the first node's folder, rn, is a prefix of the others', rn2...
	if err := killAll(ctx, func() []int { return append(n.cgroupProcs(), ProcessesUsing(n.Dir+"/")...) }); err != nil {
		errs = append(errs, fmt.Errorf("real node %s: %w", n.Name, err))
	}
	slices.Sort(n.podNetns)
	n.podNetns = slices.Compact(n.podNetns)
	if err := unmountUnder(n.Dir, n.podNetns); err != nil {
		errs = append(errs, fmt.Errorf("real node %s: %w", n.Name, err))
	}
	for _, p := range n.podNetns {
		if err := os.Remove(p); err != nil && !os.IsNotExist(err) {
			errs = append(errs, fmt.Errorf("real node %s: removing %s: %w", n.Name, p, err))
		}
	}
	for _, d := range n.cgroupDirs() {
		if err := os.Remove(d); err != nil && !os.IsNotExist(err) {
			errs = append(errs, fmt.Errorf("real node %s: removing cgroup %s: %w", n.Name, d, err))
		}
	}
	results, _ := filepath.Glob(filepath.Join(cniResultsDir, n.cniNetwork()+"-*"))
	for _, r := range results {
		if err := os.Remove(r); err != nil {
			errs = append(errs, fmt.Errorf("real node %s: %w", n.Name, err))
		}
	}
	return errors.Join(errs...)
}

// killAll SIGKILLs the processes pids returns until it returns none, for up to 20 s.
func killAll(ctx context.Context, pids func() []int) error {
	deadline := time.Now().Add(20 * time.Second)
	for {
		left := pids()
		if len(left) == 0 {
			return nil
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return fmt.Errorf("processes %v still running after SIGKILL", left)
		}
		for _, pid := range left {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// unmountUnder unmounts every mount under dir and at the given paths, innermost first; a
// mount that stays busy is detached.
func unmountUnder(dir string, paths []string) error {
	mounts, err := readMountinfo()
	if err != nil {
		return err
	}
	var errs []error
	for i := len(mounts) - 1; i >= 0; i-- {
		p := mounts[i].point
		if !strings.HasPrefix(p, dir+"/") && !slices.Contains(paths, p) {
			continue
		}
		if err := unix.Unmount(p, 0); err != nil && !errors.Is(err, unix.EINVAL) && !errors.Is(err, unix.ENOENT) {
			if err := unix.Unmount(p, unix.MNT_DETACH); err != nil && !errors.Is(err, unix.EINVAL) {
				errs = append(errs, fmt.Errorf("unmounting %s: %w", p, err))
			}
		}
	}
	return errors.Join(errs...)
}

// mount is one line of /proc/self/mountinfo.
type mount struct{ point, fstype string }

// readMountinfo returns this process's mounts, in the order they were made.
func readMountinfo() ([]mount, error) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return nil, fmt.Errorf("reading mounts: %w", err)
	}
	defer func() { _ = f.Close() }()
	var mounts []mount
	s := bufio.NewScanner(f)
	s.Buffer(make([]byte, 0, 64*1024), 1<<20)
	for s.Scan() {
		fields := strings.Fields(s.Text())
		sep := slices.Index(fields, "-")
		if len(fields) < 5 || sep < 0 || sep+1 >= len(fields) {
			continue
		}
		mounts = append(mounts, mount{point: unescapeMount(fields[4]), fstype: fields[sep+1]})
	}
	if err := s.Err(); err != nil {
		return nil, fmt.Errorf("reading mounts: %w", err)
	}
	return mounts, nil
}

// unescapeMount decodes mountinfo's octal escapes (\040 for a space, ...).
func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if v, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(v))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}
