package provider_test

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ipamv1alpha1 "github.com/peerkit/terraform-provider-liqo/internal/api/ipam/v1alpha1"
	networkingv1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/networking/v1beta1"
)

const clusterDataSourceConfig = `
data "liqo_cluster" "p" {
  cluster = "provider"
}
`

// offCreateOwned creates an object for a test and deletes it at the end; an object that already
// exists (made by another test) is left alone.
func offCreateOwned(t *testing.T, c client.Client, obj client.Object) bool {
	t.Helper()
	ctx := context.Background()
	err := c.Create(ctx, obj)
	if apierrors.IsAlreadyExists(err) {
		return false
	}
	if err != nil {
		t.Fatalf("creating %T %s/%s: %v", obj, obj.GetNamespace(), obj.GetName(), err)
	}
	t.Cleanup(func() { _ = c.Delete(ctx, obj) })
	return true
}

// setupClusterFacts stands in for the liqo controllers of the provider cluster, which the test
// clusters do not run: the cluster-ID ConfigMap and the IPAM Networks with the cluster's CIDRs,
// as the controllers (and upstream's chart) write them: namespace liqo, label
// ipam.liqo.io/network-type, the pod CIDR's named pod-cidr-<cidr>.
func setupClusterFacts(t *testing.T) (clusterID, podCIDR, externalCIDR string, network func(name, typ, specCIDR, statusCIDR string, extraLabels map[string]string)) {
	t.Helper()
	ctx := context.Background()
	c := cluster("provider").Client
	offCreateOwned(t, c, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "liqo"}})
	offCreateOwned(t, c, &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: "liqo", Name: "liqo-clusterid-configmap"},
		Data:       map[string]string{"CLUSTER_ID": "cl-ds-provider"},
	})
	network = func(name, typ, specCIDR, statusCIDR string, extraLabels map[string]string) {
		labels := map[string]string{"ipam.liqo.io/network-type": typ}
		for k, v := range extraLabels {
			labels[k] = v
		}
		n := &ipamv1alpha1.Network{
			ObjectMeta: metav1.ObjectMeta{Namespace: "liqo", Name: name, Labels: labels},
			Spec:       ipamv1alpha1.NetworkSpec{CIDR: networkingv1beta1.CIDR(specCIDR)},
		}
		if offCreateOwned(t, c, n) && statusCIDR != "" {
			n.Status.CIDR = networkingv1beta1.CIDR(statusCIDR)
			if err := c.Status().Update(ctx, n); err != nil {
				t.Fatal(err)
			}
		}
	}
	upstream := map[string]string{"ipam.liqo.io/network-not-remapped": "true", "ipam.liqo.io/network-shared": "true"}
	network("pod-cidr-10-200-0-0-16", "pod-cidr", "10.200.0.0/16", "", upstream)
	// The external CIDR as allocated by the IPAM (status) wins over the requested one (spec).
	network("external-cidr", "external-cidr", "10.70.0.0/16", "10.71.0.0/16", nil)
	// A peer's remapped pod and external CIDRs are not this cluster's.
	peer := map[string]string{"liqo.io/remote-cluster-id": "cl-somebody"}
	network("peer-pod-cidr", "pod-cidr", "10.99.0.0/16", "", peer)
	network("peer-external-cidr", "external-cidr", "10.98.0.0/16", "", peer)

	// Report what is there (another test may have made these objects first).
	cm := &corev1.ConfigMap{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: "liqo", Name: "liqo-clusterid-configmap"}, cm); err != nil {
		t.Fatal(err)
	}
	cidr := func(name string) string {
		n := &ipamv1alpha1.Network{}
		if err := c.Get(ctx, client.ObjectKey{Namespace: "liqo", Name: name}, n); err != nil {
			t.Fatal(err)
		}
		if n.Status.CIDR != "" {
			return string(n.Status.CIDR)
		}
		return string(n.Spec.CIDR)
	}
	return cm.Data["CLUSTER_ID"], cidr("pod-cidr-10-200-0-0-16"), cidr("external-cidr"), network
}

func TestAccClusterDataSource(t *testing.T) {
	const addr = "data.liqo_cluster.p"
	var steps []resource.TestStep
	err := cluster("provider").Client.Get(context.Background(),
		client.ObjectKey{Namespace: "liqo", Name: "liqo-clusterid-configmap"}, &corev1.ConfigMap{})
	if apierrors.IsNotFound(err) {
		// Before the controllers have started: a clear error.
		steps = append(steps, resource.TestStep{
			Config: providerBlock() + clusterDataSourceConfig,
			ExpectError: offWrappedText(`cluster "provider"`, `has no cluster ID (ConfigMap liqo/liqo-clusterid-configmap, key CLUSTER_ID):`,
				`the liqo controllers are not installed or have not started there`),
		})
	}
	var id, pod, ext string
	var network func(name, typ, specCIDR, statusCIDR string, extraLabels map[string]string)
	steps = append(steps, resource.TestStep{
		PreConfig: func() { id, pod, ext, network = setupClusterFacts(t) },
		Config:    providerBlock() + clusterDataSourceConfig,
		ConfigStateChecks: []statecheck.StateCheck{
			statecheck.ExpectKnownValue(addr, tfjsonpath.New("cluster_id"), offKnownString(func() string { return id })),
			statecheck.ExpectKnownValue(addr, tfjsonpath.New("pod_cidr"), offKnownString(func() string { return pod })),
			statecheck.ExpectKnownValue(addr, tfjsonpath.New("pod_cidrs"), knownStrings(func() []string { return []string{pod} })),
			statecheck.ExpectKnownValue(addr, tfjsonpath.New("external_cidr"), offKnownString(func() string { return ext })),
			statecheck.ExpectKnownValue(addr, tfjsonpath.New("api_server_url"), knownvalue.StringExact(cluster("provider").Config.Host)),
			statecheck.ExpectKnownValue(addr, tfjsonpath.New("kubernetes_version"), knownvalue.StringRegexp(regexp.MustCompile(`^v1\.\d+\.\d+`))),
		},
	}, resource.TestStep{
		// Two more pod CIDRs of the cluster's own (upstream's podCIDRs), one of them reported in
		// status.cidr: pod_cidrs lists them all, in the Networks' name order (here not the CIDRs'
		// order), and pod_cidr, which holds one, is null.
		PreConfig: func() {
			network("pod-cidr-10-202-0-0-16", "pod-cidr", "10.202.0.0/16", "10.202.0.0/16", nil)
			network("pod-cidr-10-9-0-0-16", "pod-cidr", "10.9.0.0/16", "", nil)
		},
		Config: providerBlock() + clusterDataSourceConfig,
		ConfigStateChecks: []statecheck.StateCheck{
			statecheck.ExpectKnownValue(addr, tfjsonpath.New("pod_cidrs"),
				knownStrings(func() []string { return []string{pod, "10.202.0.0/16", "10.9.0.0/16"} })),
			statecheck.ExpectKnownValue(addr, tfjsonpath.New("pod_cidr"), knownvalue.Null()),
			statecheck.ExpectKnownValue(addr, tfjsonpath.New("cluster_id"), offKnownString(func() string { return id })),
			statecheck.ExpectKnownValue(addr, tfjsonpath.New("external_cidr"), offKnownString(func() string { return ext })),
		},
	})
	resource.Test(t, resource.TestCase{ProtoV6ProviderFactories: protoV6Providers, Steps: steps})
	if id == "cl-ds-provider" && (pod != "10.200.0.0/16" || ext != "10.71.0.0/16") {
		t.Errorf("the test's own Networks read as pod %s, external %s", pod, ext)
	}
}

// knownStrings checks a list of strings known only when the step runs.
type knownStrings func() []string

// CheckValue compares the list with the function's result, in order.
func (f knownStrings) CheckValue(v any) error {
	list, ok := v.([]any)
	if !ok {
		return fmt.Errorf("expected a list, got %T", v)
	}
	got := make([]string, len(list))
	for i, e := range list {
		if got[i], ok = e.(string); !ok {
			return fmt.Errorf("element %d: expected a string, got %T", i, e)
		}
	}
	if !slices.Equal(got, f()) {
		return fmt.Errorf("expected %q, got %q", f(), got)
	}
	return nil
}

// String describes the check.
func (f knownStrings) String() string { return fmt.Sprint(f()) }

// offKnownString checks a string known only when the step runs.
type offKnownString func() string

// CheckValue compares the value with the function's result.
func (f offKnownString) CheckValue(v any) error {
	s, ok := v.(string)
	if !ok {
		return fmt.Errorf("expected a string, got %T", v)
	}
	if s != f() {
		return fmt.Errorf("expected %q, got %q", f(), s)
	}
	return nil
}

// String describes the check.
func (f offKnownString) String() string { return f() }
