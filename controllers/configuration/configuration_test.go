package configuration_test

import (
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/peerkit/terraform-provider-liqo/controllers/configuration"
	ipamv1alpha1 "github.com/peerkit/terraform-provider-liqo/internal/api/ipam/v1alpha1"
	netv1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/networking/v1beta1"
	"github.com/peerkit/terraform-provider-liqo/internal/clusternet"
	"github.com/peerkit/terraform-provider-liqo/internal/consts"
	"github.com/peerkit/terraform-provider-liqo/internal/test/testenv"
)

// TestConfiguration checks overlap detection against local pod, service and external CIDRs
// and other peers' (remapped) CIDRs, allocation from the pool, and that allocations stay put.
func TestConfiguration(t *testing.T) {
	ctx := t.Context()
	cl := plain.Env(t).Cluster("a")
	c := cl.Client
	// The local external CIDR comes from a Network in the liqo namespace.
	namespaces(t, c, "liqo", "t-b", "t-c", "t-d")
	testenv.StartManager(t, cl, func(mgr ctrl.Manager) error {
		return (&configuration.Reconciler{Client: mgr.GetClient(), LocalCIDRs: []string{"10.96.0.0/12"}, Pool: []string{"10.64.0.0/14"}}).SetupWithManager(mgr)
	})
	// The default one, as the controller manager writes it without --external-cidr (not marked
	// not-remapped): it counts as used all the same.
	for _, n := range (clusternet.Spec{ExternalCIDR: clusternet.DefaultExternalCIDR, ExternalCIDRDefaulted: true}).Networks() {
		if err := c.Create(ctx, n); err != nil {
			t.Fatal(err)
		}
	}
	mk := func(ns string, pod, ext string) *netv1beta1.Configuration {
		conf := &netv1beta1.Configuration{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "conf"}, Spec: netv1beta1.ConfigurationSpec{
			Local:  &netv1beta1.ClusterConfig{CIDR: netv1beta1.ClusterConfigCIDR{Pod: []netv1beta1.CIDR{"10.0.0.0/16"}}},
			Remote: netv1beta1.ClusterConfig{CIDR: netv1beta1.ClusterConfigCIDR{Pod: []netv1beta1.CIDR{netv1beta1.CIDR(pod)}, External: []netv1beta1.CIDR{netv1beta1.CIDR(ext)}}},
		}}
		if err := c.Create(ctx, conf); err != nil {
			t.Fatal(err)
		}
		return conf
	}
	wait := func(conf *netv1beta1.Configuration) *netv1beta1.Configuration {
		t.Helper()
		for deadline := time.Now().Add(15 * time.Second); ; time.Sleep(100 * time.Millisecond) {
			if err := c.Get(ctx, client.ObjectKeyFromObject(conf), conf); err != nil {
				t.Fatal(err)
			}
			if conf.Status.Remote != nil && meta.FindStatusCondition(conf.Status.Conditions, configuration.ReadyCondition) != nil {
				return conf
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: no status", conf.Namespace)
			}
		}
	}
	check := func(conf *netv1beta1.Configuration, pod, ext, reason string) {
		t.Helper()
		st := conf.Status.Remote.CIDR
		cond := meta.FindStatusCondition(conf.Status.Conditions, configuration.ReadyCondition)
		if len(st.Pod) != 1 || string(st.Pod[0]) != pod || len(st.External) != 1 || string(st.External[0]) != ext || cond.Reason != reason {
			t.Errorf("%s: status pod %v external %v reason %s; want pod %s external %s reason %s", conf.Namespace, st.Pod, st.External, cond.Reason, pod, ext, reason)
		}
	}
	// b: pod CIDR overlaps the local pod CIDR, external the local service CIDR.
	b := wait(mk("t-b", "10.0.0.0/16", "10.100.0.0/16"))
	check(b, "10.64.0.0/16", "10.65.0.0/16", "Remapped")
	// c: asks for what b was remapped to (another peer's CIDR) and for the local external CIDR.
	cc := wait(mk("t-c", "10.64.0.0/16", "10.70.0.0/16"))
	check(cc, "10.66.0.0/16", "10.67.0.0/16", "Remapped")
	// d: overlaps nothing.
	d := wait(mk("t-d", "172.16.0.0/16", "192.168.0.0/24"))
	check(d, "172.16.0.0/16", "192.168.0.0/24", "NoOverlap")

	// Allocations stay put when the controller runs again (a change elsewhere requeues all).
	if err := c.Create(ctx, &ipamv1alpha1.Network{ObjectMeta: metav1.ObjectMeta{Namespace: "liqo", Name: consts.PodCIDRNetworkName("10.0.0.0/16"),
		Labels: map[string]string{consts.NetworkTypeLabel: consts.PodCIDRNetwork}}, Spec: ipamv1alpha1.NetworkSpec{CIDR: "10.0.0.0/16"}}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Second)
	check(wait(b), "10.64.0.0/16", "10.65.0.0/16", "Remapped")
	check(wait(cc), "10.66.0.0/16", "10.67.0.0/16", "Remapped")
}

// TestAllocationHeldAgainstNewPeer: a peer that asks for the range another peer was remapped to
// does not take it from that one, whichever of the two is reconciled first (the manager's queue
// decides). Once counted as used before it held anything, such a peer made the holder move.
func TestAllocationHeldAgainstNewPeer(t *testing.T) {
	ctx := t.Context()
	c := plain.Env(t).Cluster("a").Client
	r := &configuration.Reconciler{Client: c, LocalCIDRs: []string{"10.96.0.0/12"}, Pool: []string{"10.64.0.0/14"}}
	reconcile := func(ns string) *netv1beta1.Configuration {
		t.Helper()
		key := client.ObjectKey{Namespace: ns, Name: "conf"}
		if _, err := r.Reconcile(ctx, ctrl.Request{NamespacedName: key}); err != nil {
			t.Fatalf("reconciling %s: %v", key, err)
		}
		conf := &netv1beta1.Configuration{}
		if err := c.Get(ctx, key, conf); err != nil {
			t.Fatal(err)
		}
		return conf
	}
	namespaces(t, c, "liqo", "t-b", "t-c")
	for _, pod := range []struct{ ns, cidr string }{{"t-b", "10.0.0.0/16"}, {"t-c", "10.64.0.0/16"}} {
		conf := &netv1beta1.Configuration{ObjectMeta: metav1.ObjectMeta{Namespace: pod.ns, Name: "conf"}, Spec: netv1beta1.ConfigurationSpec{
			Local:  &netv1beta1.ClusterConfig{CIDR: netv1beta1.ClusterConfigCIDR{Pod: []netv1beta1.CIDR{"10.0.0.0/16"}}},
			Remote: netv1beta1.ClusterConfig{CIDR: netv1beta1.ClusterConfigCIDR{Pod: []netv1beta1.CIDR{netv1beta1.CIDR(pod.cidr)}}},
		}}
		if err := c.Create(ctx, conf); err != nil {
			t.Fatal(err)
		}
		if pod.ns == "t-b" {
			if got := reconcile("t-b").Status.Remote.CIDR.Pod; len(got) != 1 || got[0] != "10.64.0.0/16" {
				t.Fatalf("t-b remapped to %v, want [10.64.0.0/16]", got)
			}
		}
	}
	// t-c exists, asking for 10.64.0.0/16, and t-b happens to be reconciled first.
	if got := reconcile("t-b").Status.Remote.CIDR.Pod; len(got) != 1 || got[0] != "10.64.0.0/16" {
		t.Errorf("t-b moved to %v when t-c asked for its range; want it kept at [10.64.0.0/16]", got)
	}
	if got := reconcile("t-c").Status.Remote.CIDR.Pod; len(got) != 1 || got[0] != "10.65.0.0/16" {
		t.Errorf("t-c mapped to %v, want the next free range [10.65.0.0/16]", got)
	}
}
