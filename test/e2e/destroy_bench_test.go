package e2e

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// BenchmarkDestroy measures `terraform destroy` of examples/peering against its floor in the
// same sandbox: per iteration, the floor is the time to delete one empty namespace on the
// consumer and one on the provider at once (until both are NotFound: kube-controller-manager's
// namespace controller waits 5 s before it looks at a deleted namespace); then examples/peering
// is applied (networking as the sandbox has it) and its destroy timed, and nothing may be left
// (no Liqo object, tenant or remote namespace, Terminating or not, no gateway process or
// tunnel interface). It reports the mean destroy time, the mean floor and their ratio (goal:
// destroy-x ≤ 2).
// Run with: go test -run '^$' -bench BenchmarkDestroy -benchtime 3x -timeout 30m ./test/e2e/
func BenchmarkDestroy(b *testing.B) {
	r := startSandbox(b, 2)
	args := r.tfArgs("peering", "consumer_kubeconfig="+filepath.Join(r.state, "consumer.kubeconfig"),
		"provider_kubeconfig="+filepath.Join(r.state, "provider.kubeconfig"))
	var destroy, floor time.Duration
	n := 0
	for b.Loop() {
		b.StopTimer()
		f := r.floorNamespaceDelete(b, fmt.Sprintf("bench-floor-%d", n))
		r.mustTF(b, "peering", append([]string{"apply", "-auto-approve"}, args...)...)
		b.StartTimer()
		d := r.mustTF(b, "peering", append([]string{"destroy", "-auto-approve"}, args...)...)
		b.StopTimer()
		r.expectNothingLeft(b)
		b.Logf("iteration %d (networking %t): destroy %s, floor (one empty namespace on each side) %s, ratio %.2f",
			n, r.networking, d.Round(time.Millisecond), f.Round(time.Millisecond), d.Seconds()/f.Seconds())
		destroy += d
		floor += f
		n++
		b.StartTimer()
	}
	b.ReportMetric(destroy.Seconds()/float64(n), "destroy-s")
	b.ReportMetric(floor.Seconds()/float64(n), "floor-ns-delete-s")
	b.ReportMetric(destroy.Seconds()/floor.Seconds(), "destroy-x")
}

// floorNamespaceDelete creates an empty namespace named name on the consumer and on the
// provider, then deletes both at once and returns how long it took until both were gone.
func (r *sandboxRun) floorNamespaceDelete(tb testing.TB, name string) time.Duration {
	tb.Helper()
	ctx := tb.Context()
	sides := []client.Client{r.clients["consumer"], r.clients["provider"]}
	for _, c := range sides {
		if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}); err != nil {
			tb.Fatalf("creating namespace %s: %v", name, err)
		}
	}
	start := time.Now()
	errs := make(chan error, len(sides))
	for _, c := range sides {
		go func() { errs <- deleteNamespaceAndWait(ctx, c, name) }()
	}
	var all []error
	for range sides {
		all = append(all, <-errs)
	}
	took := time.Since(start)
	if err := errors.Join(all...); err != nil {
		tb.Fatal(err)
	}
	return took
}

// deleteNamespaceAndWait deletes the namespace name and waits (up to a minute, looking every
// 50 ms) until it is NotFound.
func deleteNamespaceAndWait(ctx context.Context, c client.Client, name string) error {
	if err := c.Delete(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}); err != nil {
		return fmt.Errorf("deleting namespace %s: %w", name, err)
	}
	err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		err := c.Get(ctx, client.ObjectKey{Name: name}, &corev1.Namespace{})
		if apierrors.IsNotFound(err) {
			return true, nil
		}
		return false, err
	})
	if err != nil {
		return fmt.Errorf("waiting for namespace %s to be gone: %w", name, err)
	}
	return nil
}
