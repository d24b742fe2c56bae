package testenv

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// Leftovers lists what of the node is still on the machine: processes (its own, its pods',
// containerd's shims), mounts under its folder or of its network namespaces, those namespaces,
// its host link, its host iptables rules, its cgroups and libcni's cached results. After the
// Env's Stop it is empty.
func (n *RealNode) Leftovers(ctx context.Context) []string {
	var left []string
	if pids := append(ProcessesUsing(n.Dir+"/"), n.cgroupProcs()...); len(pids) > 0 {
		left = append(left, fmt.Sprintf("processes %v", pids))
	}
	watched := append([]string{n.net.path()}, n.podNetns...)
	if mounts, err := readMountinfo(); err == nil {
		for _, m := range mounts {
			if strings.HasPrefix(m.point, n.Dir+"/") || m.point == n.Dir || slices.Contains(watched, m.point) {
				left = append(left, "mount "+m.point)
			}
		}
	}
	for _, p := range watched {
		if _, err := os.Lstat(p); err == nil {
			left = append(left, "network namespace "+p)
		}
	}
	if _, err := net.InterfaceByName(n.net.hostLink); err == nil {
		left = append(left, "link "+n.net.hostLink)
	}
	if out, err := run(ctx, "iptables-save"); err == nil {
		for _, line := range strings.Split(out, "\n") {
			if strings.Contains(line, iptablesComment+" "+n.net.hostLink+"\"") {
				left = append(left, "iptables rule "+line)
			}
		}
	} else {
		left = append(left, "iptables-save failed: "+err.Error())
	}
	for _, d := range n.cgroupDirs() {
		left = append(left, "cgroup "+d)
	}
	for _, p := range n.containerFiles(n.containers) {
		if _, err := os.Lstat(p); err == nil {
			left = append(left, "file "+p)
		}
	}
	if results, _ := filepath.Glob(filepath.Join(cniResultsDir, n.cniNetwork()+"-*")); len(results) > 0 {
		left = append(left, fmt.Sprintf("CNI results %v", results))
	}
	return left
}

// PodNetns returns the network namespaces (files under /run/netns) of the node's pods, as
// containerd records them.
func (n *RealNode) PodNetns(ctx context.Context) []string { return n.sandboxNetns(ctx) }
