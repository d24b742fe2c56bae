package peering

import (
	"context"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ipamv1alpha1 "github.com/peerkit/terraform-provider-liqo/internal/api/ipam/v1alpha1"
	netv1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/networking/v1beta1"
	"github.com/peerkit/terraform-provider-liqo/internal/clusternet"
	"github.com/peerkit/terraform-provider-liqo/internal/test/testenv"
)

// OneCluster is a cluster with our CRDs and nothing else, shared by the tests that read and
// write one side of a peering directly (each in its own namespaces); TestMain stops it.
var OneCluster = testenv.NewShared(nil, testenv.ClusterOptions{Name: "a"})

// TestEnsureConfigurationReadsOwnNetworks: the Configuration written for a peer holds the peer's
// own pod and external CIDRs, found by label whatever the Networks' names (upstream's
// pod-cidr-<cidr>), not the Networks that stand for the peer's own peers; a peer without a pod
// CIDR is an error naming the label and the flag. One API server plays both clusters: the
// remote side's Networks are read, the local side's Configuration written.
func TestEnsureConfigurationReadsOwnNetworks(t *testing.T) {
	c := OneCluster.Env(t).Cluster("a").Client
	ctx := t.Context()
	for _, ns := range []string{"liqo", "liqo-tenant-cl-b"} {
		if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
			t.Fatal(err)
		}
	}
	p := &pair{}
	local := side{c: Cluster{Name: "local", Client: c}, ns: "liqo-tenant-cl-b", remote: "cl-b"}
	remote := side{c: Cluster{Name: "remote", Client: c}}

	if err := p.ensureConfiguration(ctx, local, remote); err == nil ||
		!strings.Contains(err.Error(), "remote has no pod CIDR: no Network of namespace liqo labelled ipam.liqo.io/network-type=pod-cidr") ||
		!strings.Contains(err.Error(), "--pod-cidr") {
		t.Errorf("ensureConfiguration without the peer's pod CIDR: %v", err)
	}

	for _, n := range (clusternet.Spec{PodCIDR: "10.120.0.0/16", ServiceCIDR: "10.96.0.0/12", ExternalCIDR: "10.71.0.0/16"}).Networks() {
		if err := c.Create(ctx, n); err != nil {
			t.Fatal(err)
		}
	}
	for name, typ := range map[string]string{"pod-cidr-10-99-0-0-16": "pod-cidr", "external-cidr-cl-c": "external-cidr"} {
		n := &ipamv1alpha1.Network{ObjectMeta: metav1.ObjectMeta{Namespace: "liqo", Name: name,
			Labels: map[string]string{"ipam.liqo.io/network-type": typ, "liqo.io/remote-cluster-id": "cl-c"}},
			Spec: ipamv1alpha1.NetworkSpec{CIDR: "10.99.0.0/16"}}
		if err := c.Create(ctx, n); err != nil {
			t.Fatal(err)
		}
	}
	if err := p.ensureConfiguration(ctx, local, remote); err != nil {
		t.Fatal(err)
	}
	conf := &netv1beta1.Configuration{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: "liqo-tenant-cl-b", Name: "cl-b"}, conf); err != nil {
		t.Fatal(err)
	}
	if got := conf.Spec.Remote.CIDR; !slices.Equal(got.Pod, []netv1beta1.CIDR{"10.120.0.0/16"}) ||
		!slices.Equal(got.External, []netv1beta1.CIDR{"10.71.0.0/16"}) {
		t.Errorf("Configuration's remote CIDRs: pod %v external %v, want [10.120.0.0/16] [10.71.0.0/16]", got.Pod, got.External)
	}
}

// TestLiqoNamespace: a cluster whose Liqo is installed in another namespace than liqo has its
// cluster ID and its own networks read there; looked for in liqo, the error says to set the
// namespace.
func TestLiqoNamespace(t *testing.T) {
	c := OneCluster.Env(t).Cluster("a").Client
	ctx := t.Context()
	for _, ns := range []string{"liqo-system", "liqo-tenant-cl-d"} {
		if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "liqo-system", Name: "liqo-clusterid-configmap"},
		Data: map[string]string{"CLUSTER_ID": "cl-a"}}); err != nil {
		t.Fatal(err)
	}
	spec := clusternet.Spec{PodCIDR: "10.120.0.0/16", ServiceCIDR: "10.96.0.0/12", ExternalCIDR: "10.71.0.0/16"}
	for _, n := range spec.Networks() {
		n.Namespace = "liqo-system"
		if err := c.Create(ctx, n); err != nil {
			t.Fatal(err)
		}
	}
	installed := Cluster{Name: "remote", Client: c, LiqoNamespace: "liqo-system"}
	if id, err := ClusterID(ctx, installed); err != nil || id != "cl-a" {
		t.Errorf("ClusterID in liqo-system: %q, %v", id, err)
	}
	if _, err := ClusterID(ctx, Cluster{Name: "remote", Client: c}); err == nil || !strings.Contains(err.Error(), "set liqo_namespace") {
		t.Errorf("ClusterID looked for in liqo: %v, want an error saying to set liqo_namespace", err)
	}
	local := side{c: Cluster{Name: "local", Client: c}, ns: "liqo-tenant-cl-d", remote: "cl-d"}
	if err := (&pair{}).ensureConfiguration(ctx, local, side{c: installed}); err != nil {
		t.Fatal(err)
	}
	conf := &netv1beta1.Configuration{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: "liqo-tenant-cl-d", Name: "cl-d"}, conf); err != nil {
		t.Fatal(err)
	}
	if got := conf.Spec.Remote.CIDR.Pod; !slices.Equal(got, []netv1beta1.CIDR{"10.120.0.0/16"}) {
		t.Errorf("Configuration's remote pod CIDRs: %v, want the Networks of liqo-system's", got)
	}
}

// TestDeleteAndWaitNamesWhatHolds: a delete that does not finish in time says what holds the
// object: since when it is terminating and its finalizers (the CI run that timed out on a
// ResourceSlice said only "to be gone"); once the finalizer goes, so does the object.
func TestDeleteAndWaitNamesWhatHolds(t *testing.T) {
	c := OneCluster.Env(t).Cluster("a").Client
	ctx := t.Context()
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "held"}}); client.IgnoreAlreadyExists(err) != nil {
		t.Fatal(err)
	}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "held", Name: "held", Finalizers: []string{"example.com/hold"}}}
	if err := c.Create(ctx, cm); err != nil {
		t.Fatal(err)
	}
	short, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	err := deleteAndWait(short, Cluster{Name: "a", Client: c}, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "held", Name: "held"}}, 100*time.Millisecond)
	if err == nil || !regexp.MustCompile(`timed out waiting for \*v1.ConfigMap held/held on a to be gone \(last: terminating since 20\d\d-.*Z, held by the finalizers example.com/hold( \(then reading it failed: .*\))?\)$`).MatchString(err.Error()) {
		t.Fatalf("deleteAndWait of a held ConfigMap: %v", err)
	}
	if err := c.Get(ctx, client.ObjectKeyFromObject(cm), cm); err != nil {
		t.Fatal(err)
	}
	cm.Finalizers = nil
	if err := c.Update(ctx, cm); err != nil {
		t.Fatal(err)
	}
	if err := deleteAndWait(ctx, Cluster{Name: "a", Client: c}, cm, 100*time.Millisecond); err != nil {
		t.Errorf("deleteAndWait once released: %v", err)
	}
}
