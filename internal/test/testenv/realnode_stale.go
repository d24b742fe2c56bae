package testenv

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"syscall"
)

// staleDir holds one record per real node on this machine, so that the nodes of a test that
// was killed (SIGKILL leaves containerd's shims and the pods running, and the network in place)
// are removed when the next real node starts.
const staleDir = "/run/liqo-testenv-realnodes"

// nodeRecord is what removing a real node takes, and which process owns it.
type nodeRecord struct {
	Owner      int        `json:"owner"`
	OwnerStart string     `json:"ownerStart"` // the owner's start time (/proc/<pid>/stat), against PID reuse
	Dir        string     `json:"dir"`
	Index      int        `json:"index"`
	Netns      string     `json:"netns"`
	HostLink   string     `json:"hostLink"`
	HostRules  [][]string `json:"hostRules"`
}

var reapOnce sync.Mutex

// reapLock is the file whose lock (flock) lets one process at a time on this machine reap:
// two processes' reapers removing the same stale node at once each failed on what the other had
// just removed (a CI run: the sandbox's `down` and a testenv test, "Cannot remove namespace
// file"). It lies beside staleDir, which goes with its last record.
const reapLock = staleDir + ".lock"

// lockReaping takes reapLock, waiting for another process's reaping to end.
func lockReaping() (unlock func(), err error) {
	f, err := os.OpenFile(reapLock, os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, fmt.Errorf("locking the reaping of real nodes: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("locking the reaping of real nodes (%s): %w", reapLock, err)
	}
	return func() {
		_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		_ = f.Close()
	}, nil
}

// HoldStaleRealNodes keeps ReapStaleRealNodes, in any process on this machine, from removing
// the named real nodes (by network namespace) while this process runs and until release is
// called: a test that kills their owner on purpose checks what the kill left before another
// package's real node start reaps it.
func HoldStaleRealNodes(netns ...string) (release func(), err error) {
	if err := os.MkdirAll(staleDir, 0o700); err != nil {
		return nil, fmt.Errorf("holding real nodes %v: %w", netns, err)
	}
	holder := fmt.Sprintf("%d %s", os.Getpid(), processStart(os.Getpid()))
	var paths []string
	release = func() {
		for _, p := range paths {
			_ = os.Remove(p)
		}
	}
	for _, n := range netns {
		p := filepath.Join(staleDir, n+".hold")
		if err := os.WriteFile(p, []byte(holder), 0o600); err != nil {
			release()
			return nil, fmt.Errorf("holding real node %s: %w", n, err)
		}
		paths = append(paths, p)
	}
	return release, nil
}

// held tells whether a live process holds the real node netns (HoldStaleRealNodes).
func held(netns string) bool {
	data, err := os.ReadFile(filepath.Join(staleDir, netns+".hold"))
	if err != nil {
		return false
	}
	var pid int
	var start string
	if _, err := fmt.Sscanf(string(data), "%d %s", &pid, &start); err != nil {
		return false
	}
	return alive(pid, start)
}

// alive tells whether process pid runs and is the one that started at start (not a later
// process given the same pid).
func alive(pid int, start string) bool {
	cur := processStart(pid)
	return cur != "" && cur == start
}

// processStart returns the start time of process pid (field 22 of /proc/<pid>/stat), or "".
func processStart(pid int) string {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return ""
	}
	s := string(data)
	fields := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(fields) < 20 {
		return ""
	}
	return fields[19]
}

// writeRecord records the node's network and folder, owned by this process.
func writeRecord(n *nodeNetwork, dir string) error {
	if err := os.MkdirAll(staleDir, 0o700); err != nil {
		return fmt.Errorf("recording real node %s: %w", n.netns, err)
	}
	data, err := json.Marshal(nodeRecord{Owner: os.Getpid(), OwnerStart: processStart(os.Getpid()), Dir: dir,
		Index: n.index, Netns: n.netns, HostLink: n.hostLink, HostRules: n.hostRules})
	if err != nil {
		return fmt.Errorf("recording real node %s: %w", n.netns, err)
	}
	if err := os.WriteFile(filepath.Join(staleDir, n.netns+".json"), data, 0o600); err != nil {
		return fmt.Errorf("recording real node %s: %w", n.netns, err)
	}
	return nil
}

// removeRecord forgets the node; the last one removes the records' folder.
func removeRecord(n *nodeNetwork) {
	_ = os.Remove(filepath.Join(staleDir, n.netns+".json"))
	_ = os.Remove(filepath.Join(staleDir, n.netns+".hold"))
	_ = os.Remove(staleDir) // fails while other nodes are recorded
}

// containerIDPattern matches the containers' cgroups (runc names them by container ID).
var containerIDPattern = regexp.MustCompile(`^[0-9a-f]{64}$`)

// ReapStaleRealNodes removes the real nodes whose owning process is gone (a test killed before
// its Env's Stop): their pods' and containerd's processes, mounts, network namespaces,
// cgroups, host link and iptables rules, and folder. Starting a real node does it first.
func ReapStaleRealNodes(ctx context.Context) error {
	reapOnce.Lock()
	defer reapOnce.Unlock()
	unlock, err := lockReaping()
	if err != nil {
		return err
	}
	defer unlock()
	records, _ := filepath.Glob(filepath.Join(staleDir, "*.json"))
	var errs []error
	reaped := false
	for _, path := range records {
		data, err := os.ReadFile(path)
		if err != nil {
			continue
		}
		var r nodeRecord
		if err := json.Unmarshal(data, &r); err != nil {
			errs = append(errs, fmt.Errorf("reading %s: %w", path, err))
			continue
		}
		if alive(r.Owner, r.OwnerStart) {
			continue // its owner runs
		}
		if held(r.Netns) {
			continue // a test looks at what its killed owner left
		}
		net := &nodeNetwork{index: r.Index, netns: r.Netns, hostLink: r.HostLink, hostRules: r.HostRules}
		n := &RealNode{Name: r.Netns, Dir: r.Dir, Netns: r.Netns, net: net}
		err = errors.Join(n.sweep(ctx), n.removeContainerFiles(n.containers), net.remove(ctx))
		if err == nil {
			err = os.RemoveAll(r.Dir)
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("removing stale real node %s: %w", r.Netns, err))
			continue
		}
		removeRecord(net)
		reaped = true
	}
	if reaped {
		reapedAll()
	}
	return errors.Join(errs...)
}

// cgroupContainers returns the IDs of the containers in the node's cgroups.
func (n *RealNode) cgroupContainers() []string {
	var ids []string
	for _, d := range n.cgroupDirs() {
		if b := filepath.Base(d); containerIDPattern.MatchString(b) && !slices.Contains(ids, b) {
			ids = append(ids, b)
		}
	}
	return ids
}
