package e2e

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// expectDay2 invokes examples/day2's actions on the peering examples/peering made (the sandbox's
// two clusters, the demo's pods running on the provider): the tunnel test passes with networking
// and fails, saying why, without; a drain withdraws the consumer's pods from the provider and
// its virtual node goes; an uncordon brings the virtual node back Ready. Timings are logged.
func (r *sandboxRun) expectDay2(t *testing.T) {
	t.Helper()
	args := []string{"apply", "-auto-approve", "-input=false", "-no-color", "-state=" + filepath.Join(r.state, "day2.tfstate"),
		"-var", "consumer_kubeconfig=" + filepath.Join(r.state, "consumer.kubeconfig"),
		"-var", "provider_kubeconfig=" + filepath.Join(r.state, "provider.kubeconfig")}
	invoke := func(action string) (string, time.Duration, int) {
		out, took, code := r.tf(t, "day2", append(args, "-invoke=action."+action)...)
		return oneLine(out), took, code
	}

	out, tunnel, code := invoke("liqo_peering_test.tunnel")
	switch {
	case r.networking && (code != 0 || !strings.Contains(out, "done: the tunnel between consumer") ||
		strings.Count(out, "s ago)") != 2 || !strings.Contains(out, "last handshake")):
		t.Errorf("liqo_peering_test with networking: exit %d, want the tunnel tested, with both sides' last handshake:\n%s", code, out)
	case !r.networking && (code == 0 || !strings.Contains(out, "the peering has no tunnel to test")):
		t.Errorf("liqo_peering_test without networking: exit %d, want a failure saying there is no tunnel:\n%s", code, out)
	}

	out, drain, code := invoke("liqo_tenant_cordon.drain")
	if code != 0 || !strings.Contains(out, "is Drained") || !strings.Contains(out, "left on the cluster: none") {
		t.Errorf("liqo_tenant_cordon drain: exit %d, want the Tenant Drained and no offloaded pod left:\n%s", code, out)
	}
	// The drain is done when the consumer's pods are gone from the provider; its virtual node
	// goes too (drained first).
	pods := &corev1.PodList{}
	if err := r.clients["provider"].List(t.Context(), pods, client.InNamespace("demo-consumer")); err != nil || len(pods.Items) != 0 {
		t.Errorf("after the drain: %d of the consumer's pods on the provider (%v), want none", len(pods.Items), err)
	}
	gone := time.Now()
	if err := wait.PollUntilContextTimeout(t.Context(), 500*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		err := r.clients["consumer"].Get(ctx, client.ObjectKey{Name: "provider"}, &corev1.Node{})
		return apierrors.IsNotFound(err), nil
	}); err != nil {
		t.Errorf("after the drain, the virtual node is still there: %v", err)
	}
	drained := time.Since(gone)

	out, uncordon, code := invoke("liqo_tenant_cordon.uncordon")
	if code != 0 || !strings.Contains(out, "is Active") {
		t.Errorf("liqo_tenant_cordon uncordon: exit %d, want the Tenant Active:\n%s", code, out)
	}
	start := time.Now()
	if err := wait.PollUntilContextTimeout(t.Context(), 500*time.Millisecond, 2*time.Minute, true, func(context.Context) (bool, error) {
		return r.nodeReady(t, "consumer", "provider"), nil
	}); err != nil {
		t.Fatalf("after the uncordon, the virtual node is not Ready again: %v", err)
	}
	t.Logf("examples/day2 (networking %t): liqo_peering_test %s, drain %s (virtual node gone %s later), uncordon %s, "+
		"virtual node Ready again %s later", r.networking, tunnel.Round(time.Millisecond), drain.Round(time.Millisecond),
		drained.Round(time.Millisecond), uncordon.Round(time.Millisecond), time.Since(start).Round(time.Millisecond))
}
