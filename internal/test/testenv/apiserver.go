package testenv

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
)

// StopAPIServer kills the cluster's kube-apiserver (SIGKILL, as a crash or a lost machine
// would), leaving etcd and every other process running, to simulate a control plane that does
// not answer for a while. StartAPIServer brings it back.
func (c *Cluster) StopAPIServer() error {
	if !c.started {
		return fmt.Errorf("cluster %s: not running", c.Name)
	}
	// A graceful stop waits for long-running requests (watches) and can take longer than
	// envtest's stop timeout: kill it, then let envtest see it gone.
	for _, pid := range ProcessesUsing(c.Dir) {
		cmdline, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "cmdline"))
		if err != nil {
			continue
		}
		if args := bytes.Split(cmdline, []byte{0}); len(args) > 0 && filepath.Base(string(args[0])) == "kube-apiserver" {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}
	if err := c.env.ControlPlane.APIServer.Stop(); err != nil {
		return fmt.Errorf("cluster %s: stopping kube-apiserver: %w", c.Name, err)
	}
	return nil
}

// StartAPIServer starts the kube-apiserver that StopAPIServer stopped, on the same address,
// with the same certificates and data, and waits until it is healthy. Its log goes on in
// logs/kube-apiserver.log.
func (c *Cluster) StartAPIServer() error {
	if !c.started {
		return fmt.Errorf("cluster %s: not running", c.Name)
	}
	log, err := os.OpenFile(filepath.Join(c.Dir, "logs", "kube-apiserver.log"), os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return fmt.Errorf("cluster %s: opening apiserver log: %w", c.Name, err)
	}
	defer func() { _ = log.Close() }() // the apiserver keeps its own descriptor
	s := c.env.ControlPlane.APIServer
	s.Out, s.Err = log, log
	if err := s.Start(); err != nil {
		return fmt.Errorf("cluster %s: restarting kube-apiserver (logs in %s): %w", c.Name, filepath.Join(c.Dir, "logs"), err)
	}
	return nil
}
