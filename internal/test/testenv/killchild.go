package testenv

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
)

// KillChildAfterReport stands for a test or supervisor killed outright: it runs the test named
// test of this test binary in a child process, with env added, reportEnv naming a file for the
// child's report and TMPDIR a short folder of its own (its real nodes' sockets live there; the
// temp folders of tb are too long), which it returns (removed when tb ends). It reads the report
// until parse accepts it (the child writes it once its nodes are up, within 3 minutes), then
// kills the child with SIGKILL, and gives the parent-death signal a second to reach the
// child's kubelets, kube-proxies and containerds. It fails tb when the child exits first or
// reports nothing in time, with the child's output.
func KillChildAfterReport(tb testing.TB, test, reportEnv string, parse func(report []byte) bool, env ...string) string {
	tb.Helper()
	report := tb.TempDir() + "/report"
	tmp, err := os.MkdirTemp("", "kc")
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = os.RemoveAll(tmp) })
	cmd := exec.Command(os.Args[0], "-test.run=^"+test+"$", "-test.v") //nolint:gosec // this test binary, running one of its own tests
	cmd.Env = append(append(os.Environ(), env...), reportEnv+"="+report, "TMPDIR="+tmp)
	out := &strings.Builder{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	err = wait.PollUntilContextTimeout(tb.Context(), 200*time.Millisecond, 3*time.Minute, true, func(context.Context) (bool, error) {
		select {
		case <-exited:
			return false, errors.New("the child exited")
		default:
		}
		data, err := os.ReadFile(report)
		return err == nil && parse(data), nil
	})
	if err != nil {
		_ = cmd.Process.Kill()
		<-exited
		tb.Fatalf("child %s did not report its real nodes: %v\n%s", test, err, out)
	}
	if err := cmd.Process.Kill(); err != nil { // SIGKILL
		tb.Fatal(err)
	}
	<-exited
	time.Sleep(time.Second) // the parent-death signal reaches kubelet, kube-proxy, containerd
	return tmp
}
