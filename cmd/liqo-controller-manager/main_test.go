package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ipamv1alpha1 "github.com/peerkit/terraform-provider-liqo/internal/api/ipam/v1alpha1"
	"github.com/peerkit/terraform-provider-liqo/internal/cli"
	"github.com/peerkit/terraform-provider-liqo/internal/consts"
	"github.com/peerkit/terraform-provider-liqo/internal/test/testenv"
)

// The tests start the manager several times in this process.
func init() { cli.ControllerOptions.SkipNameValidation = ptr.To(true) }

func freeAddr(t *testing.T) string { return testenv.FreeAddr(t) }

// TestRun: the manager starts against a real cluster, records its identity, its readiness
// endpoint answers and its metrics endpoint serves controller-runtime's metrics of its
// controllers; a second start with another cluster ID is refused.
func TestRun(t *testing.T) {
	env := testenv.New(t, testenv.ClusterOptions{Name: "a", SkipLiqoCRDs: true})
	kc := env.Cluster("a").KubeconfigPath
	probe, metrics := freeAddr(t), freeAddr(t)
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"--kubeconfig", kc, "--cluster-id", "cl-a", "--pod-cidr", "10.244.0.0/16",
			"--health-probe-bind-address", probe, "--metrics-bind-address", metrics}, io.Discard)
	}()
	err := waitReady(t.Context(), probe, time.Minute, exitedFrom(done))
	if err != nil {
		cancel()
		t.Fatalf("not ready: %v", err)
	}
	cm := &corev1.ConfigMap{}
	if err := env.Cluster("a").Client.Get(t.Context(), client.ObjectKey{Namespace: consts.LiqoNamespace, Name: consts.ClusterIDConfigMap}, cm); err != nil ||
		cm.Data[consts.ClusterIDKey] != "cl-a" {
		t.Errorf("cluster ID ConfigMap: %v %v", cm.Data, err)
	}
	internal := &ipamv1alpha1.Network{}
	if err := env.Cluster("a").Client.Get(t.Context(), client.ObjectKey{Namespace: consts.LiqoNamespace, Name: consts.InternalCIDRNetwork}, internal); err != nil ||
		internal.Spec.CIDR != consts.DefaultInternalCIDR || internal.Labels[consts.NetworkTypeLabel] != consts.InternalCIDRNetwork {
		t.Errorf("internal-cidr Network (upstream's, default 10.80.0.0/16): %+v %v", internal.ObjectMeta, err)
	}
	// The controllers start after the caches sync (when readiness answers) and the leader
	// election: their metrics may come a little after readiness.
	testenv.EventuallyOK(t, "the tenant controller's metrics", 30*time.Second, func() error {
		resp, err := http.Get("http://" + metrics + "/metrics") //nolint:noctx // a test's one-off request
		if err != nil {
			return fmt.Errorf("metrics endpoint: %w", err)
		}
		body, err := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		switch {
		case err != nil:
			return fmt.Errorf("reading the metrics: %w", err)
		case resp.StatusCode != http.StatusOK:
			return fmt.Errorf("metrics endpoint answered %s", resp.Status)
		case !strings.Contains(string(body), `controller_runtime_reconcile_total{controller="tenant"`):
			return fmt.Errorf("metrics endpoint serves no controller_runtime_reconcile_total of the tenant controller:\n%.2000s", body)
		}
		return nil
	})
	cancel()
	if err := <-done; err != nil {
		t.Errorf("manager stopped with %v", err)
	}

	err = run(t.Context(), []string{"--kubeconfig", kc, "--cluster-id", "cl-b", "--health-probe-bind-address", "0", "--metrics-bind-address", "0"}, io.Discard)
	if err == nil || !strings.Contains(err.Error(), `this cluster's ID is "cl-a"`) {
		t.Errorf("restart with another cluster ID: %v", err)
	}
}

// TestBadFlags: wrong flags fail before anything is written, naming the flag.
func TestBadFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--cluster-id", "Bad_ID"}, "not a DNS label"},
		{[]string{"--pod-cidr", "10.0.0.0/33"}, "--pod-cidr"},
		{[]string{"--no-such-flag"}, "no-such-flag"},
		{[]string{"extra"}, "unexpected arguments"},
		{[]string{"--share-percent", "0"}, "--share-percent 0"},
		{[]string{"--share", "cpu=lots"}, `cpu="lots" is not a quantity`},
		{[]string{"--share", "cpu"}, `"cpu" is not name=quantity`},
		{[]string{"--kube-api-qps", "0"}, "--kube-api-qps 0"},
		{[]string{"--kube-api-burst", "-1"}, "must be positive"},
		{[]string{"--pod-cidr", "10.80.0.0/24"}, "--internal-cidr 10.80.0.0/16 overlaps --pod-cidr 10.80.0.0/24"},
		{[]string{"--internal-cidr", "10.96.0.0/16", "--service-cidr", "10.96.0.0/12"}, "--internal-cidr 10.96.0.0/16 overlaps --service-cidr 10.96.0.0/12"},
		{[]string{"--internal-cidr", "10.70.128.0/17"}, "--internal-cidr 10.70.128.0/17 overlaps --external-cidr 10.70.0.0/16"},
		{[]string{"--internal-cidr", "10.80.0.1/16"}, `--internal-cidr "10.80.0.1/16" is not a network CIDR`},
		{[]string{"--remote-namespace-pod-security", "priviledged"}, `--remote-namespace-pod-security: "priviledged" is not a Pod Security level: use one of privileged, baseline, restricted`},
	} {
		_, err := parse(tc.args, io.Discard)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("parse(%v) = %v, want an error containing %q", tc.args, err, tc.want)
		}
	}
}

// TestExternalCIDRDefault: without --external-cidr the cluster's external CIDR is upstream's
// default, recorded as a default (its Network not marked not-remapped); one set is the user's.
func TestExternalCIDRDefault(t *testing.T) {
	for _, tc := range []struct {
		args      []string
		cidr      string
		defaulted bool
	}{
		{nil, "10.70.0.0/16", true},
		{[]string{"--external-cidr", "10.70.0.0/16"}, "10.70.0.0/16", false},
		{[]string{"--external-cidr=10.71.0.0/16"}, "10.71.0.0/16", false},
	} {
		o, err := parse(tc.args, io.Discard)
		if err != nil {
			t.Fatalf("parse(%v): %v", tc.args, err)
		}
		if o.identity.ExternalCIDR != tc.cidr || o.identity.ExternalCIDRDefault != tc.defaulted {
			t.Errorf("parse(%v): external CIDR %q (default %v), want %q (default %v)", tc.args,
				o.identity.ExternalCIDR, o.identity.ExternalCIDRDefault, tc.cidr, tc.defaulted)
		}
	}
}

// TestInternalCIDRDefault: without --internal-cidr the fabric's internal CIDR is upstream's
// default 10.80.0.0/16, recorded as a default; one set that overlaps nothing is the user's.
func TestInternalCIDRDefault(t *testing.T) {
	o, err := parse(nil, io.Discard)
	if err != nil || o.identity.InternalCIDR != "10.80.0.0/16" || !o.identity.InternalCIDRDefault {
		t.Errorf("parse(): internal CIDR %+v, %v; want 10.80.0.0/16, defaulted", o, err)
	}
	o, err = parse([]string{"--internal-cidr", "10.81.0.0/16", "--pod-cidr", "10.80.0.0/16"}, io.Discard)
	if err != nil || o.identity.InternalCIDR != "10.81.0.0/16" || o.identity.InternalCIDRDefault {
		t.Errorf("parse(--internal-cidr 10.81.0.0/16): %v", err)
	}
}

// TestPodSecurityFlag: the remote namespaces' Pod Security level is baseline unless
// --remote-namespace-pod-security names another.
func TestPodSecurityFlag(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{{nil, "baseline"}, {[]string{"--remote-namespace-pod-security=privileged"}, "privileged"},
		{[]string{"--remote-namespace-pod-security", "restricted"}, "restricted"}} {
		o, err := parse(tc.args, io.Discard)
		if err != nil {
			t.Fatalf("parse(%v): %v", tc.args, err)
		}
		if string(o.podSecurity.Default) != tc.want {
			t.Errorf("parse(%v): Pod Security level %q, want %q", tc.args, o.podSecurity.Default, tc.want)
		}
	}
}

// waitReady polls the manager's /readyz on probe until it answers 200, and fails as soon as
// exited reports that the manager stopped.
func waitReady(ctx context.Context, probe string, timeout time.Duration, exited func() error) error {
	return wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		if err := exited(); err != nil {
			return false, err
		}
		return testenv.ProbeOK(ctx, probe, "/readyz"), nil
	})
}

// exitedFrom reports a manager's exit from done (buffered), leaving the error there for
// whoever waits for the manager at the end.
func exitedFrom(done chan error) func() error {
	return func() error {
		select {
		case err := <-done:
			done <- err
			return fmt.Errorf("manager exited: %w", err)
		default:
			return nil
		}
	}
}
