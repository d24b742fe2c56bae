package sandbox

// Removing the sandbox's network: this supervisor's at its end, or what a killed supervisor
// left (the names are fixed, so a new sandbox sweeps them first).

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// removeNetwork ends the processes left in the named network namespaces (gateways whose
// supervisor died), deletes the namespaces (and so the links in them and their veth peers),
// then the links, then the tunnels' UAPI sockets left in wireguardSocketDir.
func removeNetwork(netns, links []string) error {
	var errs []error
	for _, ns := range netns {
		if _, err := os.Stat(filepath.Join(netnsDir, ns)); err != nil {
			continue
		}
		killNetnsProcesses(ns)
		if err := ipCmd("netns", "del", ns); err != nil {
			errs = append(errs, err)
		}
	}
	for _, l := range links {
		if _, err := net.InterfaceByName(l); err != nil {
			continue
		}
		if err := ipCmd("link", "del", l); err != nil {
			errs = append(errs, err)
		}
	}
	for _, s := range staleSockets() {
		if err := os.Remove(s); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, fmt.Errorf("removing the stale tunnel socket %s: %w", s, err))
		}
	}
	return errors.Join(errs...)
}

// staleSockets lists the UAPI sockets of the sandbox's tunnels in wireguardSocketDir: those a
// gateway could not remove, once the gateways are stopped.
func staleSockets() []string {
	socks, _ := filepath.Glob(filepath.Join(wireguardSocketDir, tunnelIfPrefix+"*.sock"))
	return socks
}

// killNetnsProcesses kills the processes inside a sandbox network namespace: only the
// sandbox's gateways run there.
func killNetnsProcesses(ns string) {
	out, err := exec.Command("ip", "netns", "pids", ns).Output()
	if err != nil {
		return
	}
	var pids []int
	for _, f := range strings.Fields(string(out)) {
		if pid, err := strconv.Atoi(f); err == nil && pid > 1 {
			pids = append(pids, pid)
		}
	}
	for _, pid := range pids {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
	deadline := time.Now().Add(5 * time.Second)
	for _, pid := range pids {
		for syscall.Kill(pid, 0) == nil && time.Now().Before(deadline) {
			time.Sleep(20 * time.Millisecond)
		}
	}
}

// sweepNetwork removes what a killed supervisor left: the network namespaces and root-namespace
// links named with NetPrefix, and stale tunnel sockets. It leaves them when the bridge names a
// supervisor that is still alive (another sandbox). Without root it only reports leftovers.
func sweepNetwork(out io.Writer) error {
	var netns, links []string
	entries, _ := os.ReadDir(netnsDir)
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), NetPrefix) {
			netns = append(netns, e.Name())
		}
	}
	ifs, _ := net.Interfaces()
	for _, i := range ifs {
		if strings.HasPrefix(i.Name, NetPrefix) {
			links = append(links, i.Name)
		}
	}
	if len(netns)+len(links)+len(staleSockets()) == 0 {
		return nil
	}
	if pid, ok := bridgeOwner(); ok {
		fmt.Fprintf(out, "network %s* left alone: it belongs to the running sandbox supervisor pid %d\n", NetPrefix, pid)
		return nil
	}
	if os.Geteuid() != 0 {
		return fmt.Errorf("a sandbox network is left (namespaces %v, links %v): run `liqo-sandbox down` as root to remove it", netns, links)
	}
	fmt.Fprintf(out, "removing the network a stopped sandbox left: namespaces %v, links %v\n", netns, links)
	return removeNetwork(netns, links)
}

// bridgeOwner returns the supervisor named in the bridge's alias when it is alive.
func bridgeOwner() (int, bool) {
	alias, err := os.ReadFile(filepath.Join("/sys/class/net", BridgeName, "ifalias"))
	if err != nil {
		return 0, false
	}
	_, p, ok := strings.Cut(strings.TrimSpace(string(alias)), "pid=")
	if !ok {
		return 0, false
	}
	pid, err := strconv.Atoi(p)
	if err != nil || pid <= 0 || syscall.Kill(pid, 0) != nil {
		return 0, false
	}
	cmdline, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	return pid, bytes.Contains(cmdline, []byte("serve"))
}
