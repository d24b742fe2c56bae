package testenv

import (
	"context"
	"crypto/sha256"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// shimSocketDir is where containerd 1.6's runc shims put their sockets whatever containerd's
// state folder (defaults.DefaultStateDir + "/s"); a shim removes its socket when it exits
// cleanly.
const shimSocketDir = "/run/containerd/s"

// machineDirs are the folders a real node's programs make at fixed paths, whatever their
// configuration: containerd's shim sockets, libcni's cache, kubelet's device-plugin socket.
var machineDirs = []string{shimSocketDir, filepath.Dir(shimSocketDir), cniResultsDir, filepath.Dir(cniResultsDir),
	kubeletDevicePlugins, filepath.Dir(kubeletDevicePlugins)}

// kubeletDevicePlugins is kubelet's device-plugin folder, fixed (not under --root-dir): its
// socket there is the last node's to go.
const kubeletDevicePlugins = "/var/lib/kubelet/device-plugins"

// machineState counts this process's running real nodes and remembers which machineDirs
// existed before the first one started, to remove the others when the last one stops.
var machineState struct {
	sync.Mutex
	running int
	existed map[string]bool
}

// nodeStarting records a real node's start.
func nodeStarting() {
	machineState.Lock()
	defer machineState.Unlock()
	if machineState.running == 0 {
		machineState.existed = map[string]bool{}
		for _, d := range machineDirs {
			if _, err := os.Stat(d); err == nil {
				machineState.existed[d] = true
			}
		}
	}
	machineState.running++
}

// nodeStopped records a real node's end; after the last one it removes kubelet's
// device-plugin socket and the machineDirs that did not exist before, when empty.
func nodeStopped() {
	machineState.Lock()
	defer machineState.Unlock()
	machineState.running--
	if machineState.running > 0 {
		return
	}
	removeMachineDirs(machineState.existed)
}

// removeMachineDirs removes kubelet's device-plugin socket and the machineDirs but those that
// existed before, when empty.
func removeMachineDirs(existed map[string]bool) {
	_ = os.Remove(filepath.Join(kubeletDevicePlugins, "kubelet.sock"))
	for _, d := range machineDirs { // children first
		if !existed[d] {
			_ = os.Remove(d) // fails, as it should, when not empty
		}
	}
}

// reapedAll removes what the real nodes' programs leave at fixed paths once no real node is
// recorded on the machine and none runs in this process: after reaping stale nodes, nobody
// else uses them.
func reapedAll() {
	machineState.Lock()
	defer machineState.Unlock()
	if left, _ := filepath.Glob(filepath.Join(staleDir, "*.json")); machineState.running == 0 && len(left) == 0 {
		removeMachineDirs(nil)
	}
}

// deleteTasks kills and deletes the tasks of the node's containers through containerd (pods'
// containers first, then their sandboxes), so that their shims exit cleanly: rootfs unmounted,
// shim sockets removed. It returns the containers' IDs. Best effort: a sweep follows.
func (n *RealNode) deleteTasks(ctx context.Context) []string {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	out, err := n.ctr(ctx, "containers", "list")
	if err != nil {
		return nil
	}
	var ids, apps, sandboxes []string
	for i, line := range strings.Split(strings.TrimSpace(out), "\n") {
		f := strings.Fields(line)
		if i == 0 || len(f) < 2 { // header
			continue
		}
		ids = append(ids, f[0])
		if f[1] == PauseImage {
			sandboxes = append(sandboxes, f[0])
		} else {
			apps = append(apps, f[0])
		}
	}
	for _, id := range append(apps, sandboxes...) {
		_, _ = n.ctr(ctx, "tasks", "delete", "--force", id)
	}
	return ids
}

// containerFiles are the files of containers ids at machine-wide paths: the sockets their
// shims leave when killed (containerd 1.6 names them sha256(<address>/<namespace>/<id>)) and
// libcni's cached results of their loopback interface.
func (n *RealNode) containerFiles(ids []string) []string {
	var files []string
	for _, id := range ids {
		files = append(files,
			filepath.Join(shimSocketDir, fmt.Sprintf("%x", sha256.Sum256([]byte(filepath.Join(n.socket(), "k8s.io", id))))),
			filepath.Join(cniResultsDir, "cni-loopback-"+id+"-lo"))
	}
	return files
}

// removeContainerFiles removes the containerFiles of ids.
func (n *RealNode) removeContainerFiles(ids []string) error {
	for _, p := range n.containerFiles(ids) {
		if err := os.Remove(p); err != nil && !os.IsNotExist(err) {
			return fmt.Errorf("real node %s: %w", n.Name, err)
		}
	}
	return nil
}
