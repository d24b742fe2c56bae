package configuration_test

import (
	"fmt"
	"slices"
	"sort"
	"strings"
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

func cidrs(ss ...string) []netv1beta1.CIDR {
	out := make([]netv1beta1.CIDR, len(ss))
	for i, s := range ss {
		out[i] = netv1beta1.CIDR(s)
	}
	return out
}

// TestConfigurationSeveralPodCIDRs: both sides have several pod CIDRs (upstream Liqo v1.2). Each
// remote pod CIDR is checked on its own against each of the local cluster's pod CIDRs (its own
// Networks, one per pod CIDR) and the other peers' ranges: the ones that collide get a range each
// (two colliding with the same local CIDR get two), the others are kept, and each has its
// Network. Dropping a pod CIDR from the list, or adding one in front, moves no other one's range.
func TestConfigurationSeveralPodCIDRs(t *testing.T) {
	ctx := t.Context()
	cl := plain.Env(t).Cluster("a")
	c := cl.Client
	namespaces(t, c, "liqo", "t-b", "t-c")
	testenv.StartManager(t, cl, func(mgr ctrl.Manager) error {
		return (&configuration.Reconciler{Client: mgr.GetClient(), Pool: []string{"10.64.0.0/14"}}).SetupWithManager(mgr)
	})
	// The local cluster's own Networks, as its controller manager writes them for
	// --pod-cidr=10.0.0.0/16,10.1.0.0/16: nothing else tells the reconciler about them.
	for _, n := range (clusternet.Spec{PodCIDRs: []string{"10.0.0.0/16", "10.1.0.0/16"}, ExternalCIDR: "10.70.0.0/16"}).Networks() {
		if err := c.Create(ctx, n); err != nil {
			t.Fatal(err)
		}
	}

	create := func(ns string, pod, ext []netv1beta1.CIDR) *netv1beta1.Configuration {
		t.Helper()
		conf := &netv1beta1.Configuration{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: strings.TrimPrefix(ns, "t-"),
			Labels: map[string]string{consts.RemoteClusterIDLabel: "cl-" + strings.TrimPrefix(ns, "t-")}},
			Spec: netv1beta1.ConfigurationSpec{Remote: netv1beta1.ClusterConfig{CIDR: netv1beta1.ClusterConfigCIDR{Pod: pod, External: ext}}}}
		if err := c.Create(ctx, conf); err != nil {
			t.Fatal(err)
		}
		return conf
	}
	// networks lists conf's Networks as "type spec->status", sorted.
	networks := func(conf *netv1beta1.Configuration) []string {
		list := &ipamv1alpha1.NetworkList{}
		if err := c.List(ctx, list, client.InNamespace(conf.Namespace)); err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, n := range list.Items {
			if metav1.IsControlledBy(&n, conf) && n.DeletionTimestamp.IsZero() {
				out = append(out, fmt.Sprintf("%s %s->%s", n.Labels[consts.NetworkCIDRTypeLabel], n.Spec.CIDR, n.Status.CIDR))
			}
		}
		sort.Strings(out)
		return out
	}
	// expect waits until conf's status (for its current generation) and Networks are as wanted.
	expect := func(what string, conf *netv1beta1.Configuration, pod, ext []netv1beta1.CIDR, reason string, nets ...string) {
		t.Helper()
		sort.Strings(nets)
		var got netv1beta1.ClusterConfigCIDR
		var cond *metav1.Condition
		var gotNets []string
		for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
			if err := c.Get(ctx, client.ObjectKeyFromObject(conf), conf); err != nil {
				t.Fatal(err)
			}
			if conf.Status.Remote != nil {
				got = conf.Status.Remote.CIDR
			}
			cond = meta.FindStatusCondition(conf.Status.Conditions, configuration.ReadyCondition)
			gotNets = networks(conf)
			if cond != nil && cond.ObservedGeneration == conf.Generation && cond.Reason == reason &&
				slices.Equal(got.Pod, pod) && slices.Equal(got.External, ext) && slices.Equal(gotNets, nets) {
				return
			}
		}
		t.Fatalf("%s: status pod %v external %v, condition %+v, Networks %q; want pod %v external %v, reason %s, Networks %q",
			what, got.Pod, got.External, cond, gotNets, pod, ext, reason, nets)
	}

	// b: its first and third pod CIDRs collide with the local ones (one each), its second with
	// nothing; its external CIDR with nothing.
	b := create("t-b", cidrs("10.0.0.0/16", "172.16.0.0/16", "10.1.0.0/16"), cidrs("10.80.0.0/16"))
	expect("three remote pod CIDRs, two colliding", b, cidrs("10.64.0.0/16", "172.16.0.0/16", "10.65.0.0/16"), cidrs("10.80.0.0/16"), "Remapped",
		"pod 10.0.0.0/16->10.64.0.0/16", "pod 172.16.0.0/16->172.16.0.0/16", "pod 10.1.0.0/16->10.65.0.0/16", "external 10.80.0.0/16->10.80.0.0/16")
	cond := meta.FindStatusCondition(b.Status.Conditions, configuration.ReadyCondition)
	if !strings.Contains(cond.Message, "10.0.0.0/16->10.64.0.0/16") || !strings.Contains(cond.Message, "10.1.0.0/16->10.65.0.0/16") {
		t.Errorf("condition message %q, want each remap named", cond.Message)
	}
	// c: two pod CIDRs inside the same local one, and one inside b's remap: a range each.
	cc := create("t-c", cidrs("10.0.1.0/24", "10.0.2.0/24", "10.65.0.0/16"), nil)
	expect("three remote pod CIDRs colliding", cc, cidrs("10.66.0.0/24", "10.66.1.0/24", "10.67.0.0/16"), nil, "Remapped",
		"pod 10.0.1.0/24->10.66.0.0/24", "pod 10.0.2.0/24->10.66.1.0/24", "pod 10.65.0.0/16->10.67.0.0/16")

	update := func(conf *netv1beta1.Configuration, pod []netv1beta1.CIDR) {
		t.Helper()
		if err := c.Get(ctx, client.ObjectKeyFromObject(conf), conf); err != nil {
			t.Fatal(err)
		}
		conf.Spec.Remote.CIDR.Pod = pod
		if err := c.Update(ctx, conf); err != nil {
			t.Fatal(err)
		}
	}
	// b drops its first pod CIDR: its Network goes; 10.1.0.0/16 keeps its range, though it is
	// now second in the list where 172.16.0.0/16 was.
	update(b, cidrs("172.16.0.0/16", "10.1.0.0/16"))
	expect("first pod CIDR dropped", b, cidrs("172.16.0.0/16", "10.65.0.0/16"), cidrs("10.80.0.0/16"), "Remapped",
		"pod 172.16.0.0/16->172.16.0.0/16", "pod 10.1.0.0/16->10.65.0.0/16", "external 10.80.0.0/16->10.80.0.0/16")
	// b gets a new colliding pod CIDR in front: it takes a free range, not the one of the CIDR
	// that was first before.
	update(b, cidrs("10.0.3.0/24", "172.16.0.0/16", "10.1.0.0/16"))
	expect("pod CIDR added in front", b, cidrs("10.64.0.0/24", "172.16.0.0/16", "10.65.0.0/16"), cidrs("10.80.0.0/16"), "Remapped",
		"pod 10.0.3.0/24->10.64.0.0/24", "pod 172.16.0.0/16->172.16.0.0/16", "pod 10.1.0.0/16->10.65.0.0/16", "external 10.80.0.0/16->10.80.0.0/16")
	// Nothing moved for c meanwhile.
	expect("the other peer", cc, cidrs("10.66.0.0/24", "10.66.1.0/24", "10.67.0.0/16"), nil, "Remapped",
		"pod 10.0.1.0/24->10.66.0.0/24", "pod 10.0.2.0/24->10.66.1.0/24", "pod 10.65.0.0/16->10.67.0.0/16")
}
