package clusternet_test

import (
	"maps"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ipamv1alpha1 "github.com/peerkit/terraform-provider-liqo/internal/api/ipam/v1alpha1"
	netv1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/networking/v1beta1"
	"github.com/peerkit/terraform-provider-liqo/internal/clusternet"
	"github.com/peerkit/terraform-provider-liqo/internal/test/testenv"
)

// TestNetworks: a cluster's own Networks as Spec.Networks builds them are upstream v1.2's chart's
// (names and labels spelled out here, not built from consts) and the API server takes them as
// they are; read back with peers' Networks beside them, only the cluster's own count: in the
// liqo namespace, without liqo.io/remote-cluster-id, status.cidr over spec.cidr; several
// external CIDR Networks, or several pod CIDRs where one is wanted, are errors naming them.
func TestNetworks(t *testing.T) {
	env := testenv.New(t, testenv.ClusterOptions{Name: "a"})
	c := env.Cluster("a").Client
	ctx := t.Context()
	for _, ns := range []string{"liqo", "liqo-tenant-peer"} {
		if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
			t.Fatal(err)
		}
	}

	type want struct {
		cidr   string
		labels map[string]string
	}
	typed := func(typ string, extra ...string) map[string]string {
		l := map[string]string{"ipam.liqo.io/network-type": typ}
		for _, k := range extra {
			l[k] = "true"
		}
		return l
	}
	const notRemapped, shared = "ipam.liqo.io/network-not-remapped", "ipam.liqo.io/network-shared"
	spec := clusternet.Spec{PodCIDR: "10.200.0.0/16", ServiceCIDR: "10.96.0.0/12", ExternalCIDR: "10.70.0.0/16"}
	wants := map[string]want{
		"pod-cidr-10-200-0-0-16": {"10.200.0.0/16", typed("pod-cidr", notRemapped, shared)},
		"service-cidr":           {"10.96.0.0/12", typed("service-cidr", notRemapped, shared)},
		"external-cidr":          {"10.70.0.0/16", typed("external-cidr", notRemapped)},
	}
	nets := spec.Networks()
	if len(nets) != len(wants) {
		t.Fatalf("Spec.Networks made %d Networks, want %d", len(nets), len(wants))
	}
	for _, n := range nets {
		w, ok := wants[n.Name]
		if !ok || n.Namespace != "liqo" || string(n.Spec.CIDR) != w.cidr || !maps.Equal(n.Labels, w.labels) {
			t.Errorf("Network %s/%s: CIDR %s labels %v; want one of %v", n.Namespace, n.Name, n.Spec.CIDR, n.Labels, wants)
		}
		if err := c.Create(ctx, n); err != nil {
			t.Fatalf("creating %s: %v", n.Name, err)
		}
	}
	// The default external CIDR is not the user's choice: not marked not-remapped.
	spec.ExternalCIDRDefaulted = true
	for _, n := range spec.Networks() {
		if n.Name == "external-cidr" && !maps.Equal(n.Labels, typed("external-cidr")) {
			t.Errorf("defaulted external-cidr labels %v, want the type only", n.Labels)
		}
	}
	if got := (clusternet.Spec{PodCIDR: "10.1.0.0/16"}).Networks(); len(got) != 1 || got[0].Name != "pod-cidr-10-1-0-0-16" {
		t.Errorf("a Spec with a pod CIDR only gives %v, want pod-cidr-10-1-0-0-16 only", got)
	}
	// Several pod CIDRs (upstream's podCIDRs): one Network each, upstream's name and labels; one
	// given twice (PodCIDR and again in PodCIDRs) has one Network.
	several := clusternet.Spec{PodCIDR: "10.1.0.0/16", PodCIDRs: []string{"10.2.0.0/16", "10.1.0.0/16", "10.3.0.0/24"}}
	if got := several.AllPodCIDRs(); !slices.Equal(got, []string{"10.1.0.0/16", "10.2.0.0/16", "10.3.0.0/24"}) {
		t.Errorf("AllPodCIDRs = %v, want each once, PodCIDR first", got)
	}
	var names []string
	for _, n := range (clusternet.Spec{PodCIDRs: []string{"10.2.0.0/16", "10.3.0.0/24"}}).Networks() {
		names = append(names, n.Name)
		if !maps.Equal(n.Labels, typed("pod-cidr", notRemapped, shared)) || n.Name != "pod-cidr-"+strings.NewReplacer(".", "-", "/", "-").Replace(string(n.Spec.CIDR)) {
			t.Errorf("pod CIDR Network %s (%s): labels %v, want upstream's name and labels", n.Name, n.Spec.CIDR, n.Labels)
		}
	}
	if !slices.Equal(names, []string{"pod-cidr-10-2-0-0-16", "pod-cidr-10-3-0-0-24"}) {
		t.Errorf("a Spec with PodCIDRs only gives %v, want pod-cidr-10-2-0-0-16 and pod-cidr-10-3-0-0-24", names)
	}

	// Peers' Networks: in the liqo namespace with remote-cluster-id, and in a tenant namespace.
	create := func(ns, name, specCIDR, statusCIDR string, labels map[string]string) {
		t.Helper()
		n := &ipamv1alpha1.Network{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: labels},
			Spec: ipamv1alpha1.NetworkSpec{CIDR: netv1beta1.CIDR(specCIDR)}}
		if err := c.Create(ctx, n); err != nil {
			t.Fatal(err)
		}
		if statusCIDR != "" {
			n.Status.CIDR = netv1beta1.CIDR(statusCIDR)
			if err := c.Status().Update(ctx, n); err != nil {
				t.Fatal(err)
			}
		}
	}
	peer := func(typ string) map[string]string {
		l := typed(typ)
		l["liqo.io/remote-cluster-id"] = "cl-peer"
		return l
	}
	create("liqo", "pod-cidr-10-99-0-0-16", "10.99.0.0/16", "", peer("pod-cidr"))
	create("liqo", "external-cidr-cl-peer", "10.98.0.0/16", "", peer("external-cidr"))
	create("liqo-tenant-peer", "pod-cidr", "10.97.0.0/16", "", typed("pod-cidr"))
	create("liqo-tenant-peer", "external-cidr", "10.96.0.0/16", "", typed("external-cidr"))

	read := func() []ipamv1alpha1.Network {
		t.Helper()
		nets, err := clusternet.List(ctx, c)
		if err != nil {
			t.Fatal(err)
		}
		return nets
	}
	items := read()
	if pods := clusternet.PodCIDRs(items); !slices.Equal(pods, []string{"10.200.0.0/16"}) {
		t.Errorf("PodCIDRs = %v, want [10.200.0.0/16]", pods)
	}
	if pod, err := clusternet.PodCIDR(items); err != nil || pod != "10.200.0.0/16" {
		t.Errorf("PodCIDR = %q, %v; want 10.200.0.0/16", pod, err)
	}
	if ext, err := clusternet.ExternalCIDR(items); err != nil || ext != "10.70.0.0/16" {
		t.Errorf("ExternalCIDR = %q, %v; want 10.70.0.0/16", ext, err)
	}

	// status.cidr, when reported, is the CIDR in use.
	ext := &ipamv1alpha1.Network{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: "liqo", Name: "external-cidr"}, ext); err != nil {
		t.Fatal(err)
	}
	ext.Status.CIDR = "10.75.0.0/16"
	if err := c.Status().Update(ctx, ext); err != nil {
		t.Fatal(err)
	}
	if got, err := clusternet.ExternalCIDR(read()); err != nil || got != "10.75.0.0/16" {
		t.Errorf("ExternalCIDR with status.cidr 10.75.0.0/16 = %q, %v", got, err)
	}

	// A second pod CIDR (upstream's podCIDRs) and a second external CIDR Network of the cluster.
	create("liqo", "pod-cidr-10-100-0-0-16", "10.100.0.0/16", "", typed("pod-cidr", notRemapped, shared))
	create("liqo", "external-cidr-2", "10.71.0.0/16", "", typed("external-cidr"))
	items = read()
	if pods := clusternet.PodCIDRs(items); !slices.Equal(pods, []string{"10.100.0.0/16", "10.200.0.0/16"}) {
		t.Errorf("PodCIDRs = %v, want both, in name order", pods)
	}
	for what, err := range map[string]error{"PodCIDR": second(clusternet.PodCIDR(items)), "ExternalCIDR": second(clusternet.ExternalCIDR(items))} {
		if err == nil {
			t.Errorf("%s with two: no error", what)
			continue
		}
		for _, name := range map[string][]string{
			"PodCIDR":      {"liqo/pod-cidr-10-100-0-0-16 (10.100.0.0/16)", "liqo/pod-cidr-10-200-0-0-16 (10.200.0.0/16)"},
			"ExternalCIDR": {"liqo/external-cidr (10.75.0.0/16)", "liqo/external-cidr-2 (10.71.0.0/16)"},
		}[what] {
			if !strings.Contains(err.Error(), name) {
				t.Errorf("%s with two: %v, want it to name %s", what, err, name)
			}
		}
		if strings.Contains(err.Error(), "cl-peer") || strings.Contains(err.Error(), "10.99.0.0") || strings.Contains(err.Error(), "10.98.0.0") {
			t.Errorf("%s with two: %v names a peer's Network", what, err)
		}
	}
}

func second(_ string, err error) error { return err }
