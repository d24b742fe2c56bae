package main

import (
	"context"
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/peerkit/terraform-provider-liqo/internal/consts"
	"github.com/peerkit/terraform-provider-liqo/internal/test/testenv"
)

// replica is one manager started by a test, with its log.
type replica struct {
	name    string
	log     *testenv.SyncBuffer
	cancel  context.CancelFunc
	done    chan error
	stopped bool
}

// leads tells whether the replica runs its controllers, which only the leader does.
func (r *replica) leads() bool { return strings.Contains(r.log.String(), "Starting workers") }

// stop stops the replica, if it runs, and waits for run to return.
func (r *replica) stop(t *testing.T) {
	t.Helper()
	if r.stopped {
		return
	}
	r.stopped = true
	r.cancel()
	if err := <-r.done; err != nil {
		t.Errorf("%s stopped with %v", r.name, err)
	}
}

// startReplica runs the manager with leader election on the cluster of kubeconfig kc and
// waits until it is ready.
func startReplica(t *testing.T, name, kc string) *replica {
	t.Helper()
	probe := freeAddr(t)
	ctx, cancel := context.WithCancel(context.Background())
	r := &replica{name: name, log: &testenv.SyncBuffer{}, cancel: cancel, done: make(chan error, 1)}
	go func() {
		r.done <- run(ctx, []string{"--kubeconfig", kc, "--cluster-id", "cl-a", "--leader-elect",
			"--health-probe-bind-address", probe, "--metrics-bind-address", "0"}, r.log)
	}()
	err := waitReady(t.Context(), probe, time.Minute, exitedFrom(r.done))
	if err != nil {
		cancel()
		t.Fatalf("%s not ready: %v\n%s", name, err, r.log.String())
	}
	t.Cleanup(func() { r.stop(t) })
	return r
}

// TestLeaderElection: two managers with --leader-elect on one cluster; one holds the Lease and
// runs the controllers, the other waits; when the leader stops, the other takes the Lease over
// and runs the controllers.
func TestLeaderElection(t *testing.T) {
	env := testenv.New(t, testenv.ClusterOptions{Name: "a", SkipLiqoCRDs: true})
	cl := env.Cluster("a")
	a := startReplica(t, "a", cl.KubeconfigPath)
	b := startReplica(t, "b", cl.KubeconfigPath) // after a is ready: a has set the cluster up

	lease := &coordinationv1.Lease{}
	holder := func(ctx context.Context) string {
		if cl.Client.Get(ctx, client.ObjectKey{Namespace: consts.LiqoNamespace, Name: "liqo-controller-manager"}, lease) != nil ||
			lease.Spec.HolderIdentity == nil {
			return ""
		}
		return *lease.Spec.HolderIdentity
	}
	var first string
	err := wait.PollUntilContextTimeout(t.Context(), 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		first = holder(ctx)
		return first != "" && (a.leads() || b.leads()), nil
	})
	if err != nil {
		t.Fatalf("no leader: Lease holder %q: %v", first, err)
	}
	// Several retry periods (2 s) later, still one leader, the same.
	time.Sleep(5 * time.Second)
	if a.leads() == b.leads() {
		t.Fatalf("replica a leads: %v, replica b leads: %v; want exactly one", a.leads(), b.leads())
	}
	if h := holder(t.Context()); h != first {
		t.Fatalf("Lease holder changed from %q to %q with both replicas running", first, h)
	}
	leader, follower := a, b
	if b.leads() {
		leader, follower = b, a
	}
	t.Logf("replica %s leads, holding the Lease as %q", leader.name, first)

	stoppedAt := time.Now()
	leader.stop(t)
	var next string
	err = wait.PollUntilContextTimeout(t.Context(), 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		next = holder(ctx)
		return next != "" && next != first && follower.leads(), nil
	})
	if err != nil {
		t.Fatalf("replica %s did not take over: Lease holder %q (was %q), runs the controllers: %v: %v",
			follower.name, next, first, follower.leads(), err)
	}
	t.Logf("replica %s took over as %q %v after the leader stopped", follower.name, next, time.Since(stoppedAt).Round(time.Millisecond))
}
