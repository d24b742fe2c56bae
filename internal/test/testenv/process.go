package testenv

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// process is a child process whose output goes to a log file and that the kernel kills when
// the process that started it dies, so that a crashed or killed test leaves nothing running.
type process struct {
	name string
	cmd  *exec.Cmd
	log  *os.File
	done chan struct{}
	err  error
}

// exitedError says that a test-bed process ended while it should run, with the end of its log
// (the folder it is in goes when the test ends).
type exitedError struct {
	what, name, log, tail string
	err                   error
}

func (e *exitedError) Error() string {
	return fmt.Sprintf("%s: %s exited (%v); see %s, which ends:\n%s", e.what, e.name, e.err, e.log, e.tail)
}

func (e *exitedError) Unwrap() error { return e.err }

// startProcess runs bin with args, logging to <logDir>/<name>.log.
func startProcess(name, logDir, bin string, args ...string) (*process, error) {
	logFile, err := os.Create(filepath.Join(logDir, name+".log"))
	if err != nil {
		return nil, fmt.Errorf("creating log file of %s: %w", name, err)
	}
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
	if err := cmd.Start(); err != nil {
		_ = logFile.Close()
		return nil, fmt.Errorf("starting %s: %w", name, err)
	}
	p := &process{name: name, cmd: cmd, log: logFile, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		close(p.done)
	}()
	return p, nil
}

// exited reports whether the process has ended, and its error.
func (p *process) exited() (bool, error) {
	select {
	case <-p.done:
		return true, p.err
	default:
		return false, nil
	}
}

// logTail returns the last lines (up to 1500 bytes) of the process's log, to say why it exited.
func (p *process) logTail() string { return LogTail(p.log.Name()) }

// LogTail returns the last lines (up to 1500 bytes) of the log file at path, to say why the
// process that wrote it exited; "" when it cannot be read.
func LogTail(path string) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	if len(data) > 1500 {
		data = data[len(data)-1500:]
	}
	return strings.TrimSpace(string(data))
}

// ManagerLogBeforeShutdown returns a manager log's last 30 errors and its last n lines before the test's
// SIGTERM (what came after is the shutdown's noise), for a failed test.
func ManagerLogBeforeShutdown(s string, n int) string {
	if i := strings.Index(s, "Shutdown signal received"); i >= 0 {
		s = s[:strings.LastIndex(s[:i], "\n")+1]
	}
	lines := strings.Split(s, "\n")
	var errs []string
	for _, l := range lines {
		if strings.Contains(l, `"level":"error"`) {
			errs = append(errs, l)
		}
	}
	errs = errs[max(0, len(errs)-30):]
	lines = lines[max(0, len(lines)-n):]
	return strings.Join(errs, "\n") + "\n--- last lines ---\n" + strings.Join(lines, "\n")
}

// stop sends SIGTERM to the process group, then SIGKILL after the grace period, and waits.
func (p *process) stop(grace time.Duration) error {
	defer func() { _ = p.log.Close() }()
	if done, _ := p.exited(); done {
		return nil
	}
	_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(grace):
		_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
		select {
		case <-p.done:
		case <-time.After(10 * time.Second):
			return fmt.Errorf("%s (pid %d) did not exit after SIGKILL", p.name, p.cmd.Process.Pid)
		}
	}
	var exitErr *exec.ExitError
	if p.err != nil && !errors.As(p.err, &exitErr) {
		return fmt.Errorf("waiting for %s: %w", p.name, p.err)
	}
	return nil
}

// wrapWithDeathSignal writes an executable script into dir that runs bin under
// `setpriv --pdeathsig KILL`, for the processes envtest starts on its own (etcd, kube-apiserver):
// envtest puts them in their own process group and gives them no parent-death signal.
func wrapWithDeathSignal(dir, bin string) (string, error) {
	setpriv, err := exec.LookPath("setpriv")
	if err != nil {
		return bin, nil //nolint:nilerr // without util-linux's setpriv, Stop is the only cleanup
	}
	path := filepath.Join(dir, filepath.Base(bin))
	script := fmt.Sprintf("#!/bin/sh\nexec %s --pdeathsig KILL -- %s \"$@\"\n", setpriv, bin)
	if err := os.WriteFile(path, []byte(script), 0o755); err != nil {
		return "", fmt.Errorf("writing wrapper for %s: %w", bin, err)
	}
	return path, nil
}
