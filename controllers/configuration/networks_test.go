package configuration_test

import (
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/peerkit/terraform-provider-liqo/controllers/configuration"
	ipamv1alpha1 "github.com/peerkit/terraform-provider-liqo/internal/api/ipam/v1alpha1"
	netv1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/networking/v1beta1"
	"github.com/peerkit/terraform-provider-liqo/internal/consts"
	"github.com/peerkit/terraform-provider-liqo/internal/test/testenv"
)

// TestConfigurationNetworks checks the ipam Networks of a Configuration: one per remote CIDR,
// with the remote CIDR in spec and the remapped one in status; a CIDR removed from the spec
// loses its Network; deleting the Configuration deletes them all (owner references, collected by
// kube-controller-manager).
func TestConfigurationNetworks(t *testing.T) {
	ctx := t.Context()
	// Its own cluster: a controller manager (garbage collection), which the shared one lacks.
	env := testenv.New(t, testenv.ClusterOptions{Name: "a", ControllerManager: true})
	cl := env.Cluster("a")
	c := cl.Client
	testenv.StartManager(t, cl, func(mgr ctrl.Manager) error {
		return (&configuration.Reconciler{Client: mgr.GetClient(), Pool: []string{"10.64.0.0/14"}}).SetupWithManager(mgr)
	})
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "t-b"}}); err != nil {
		t.Fatal(err)
	}
	conf := &netv1beta1.Configuration{
		ObjectMeta: metav1.ObjectMeta{Namespace: "t-b", Name: "b", Labels: map[string]string{consts.RemoteClusterIDLabel: "cluster-b"}},
		Spec: netv1beta1.ConfigurationSpec{
			Local: &netv1beta1.ClusterConfig{CIDR: netv1beta1.ClusterConfigCIDR{Pod: []netv1beta1.CIDR{"10.0.0.0/16"}}},
			Remote: netv1beta1.ClusterConfig{CIDR: netv1beta1.ClusterConfigCIDR{
				Pod: []netv1beta1.CIDR{"10.0.0.0/16"}, External: []netv1beta1.CIDR{"172.16.0.0/16"}}},
		},
	}
	if err := c.Create(ctx, conf); err != nil {
		t.Fatal(err)
	}

	// networks lists the Networks of namespace t-b as "name type spec->status", sorted.
	networks := func() ([]string, error) {
		list := &ipamv1alpha1.NetworkList{}
		if err := c.List(ctx, list, client.InNamespace("t-b")); err != nil {
			return nil, err
		}
		var out []string
		for _, n := range list.Items {
			if !metav1.IsControlledBy(&n, conf) || n.Labels[consts.RemoteClusterIDLabel] != "cluster-b" {
				return nil, fmt.Errorf("network %s: owners %v, labels %v; want controlled by the Configuration, labelled with the remote cluster", n.Name, n.OwnerReferences, n.Labels)
			}
			out = append(out, fmt.Sprintf("%s %s %s->%s", n.Name, n.Labels[consts.NetworkCIDRTypeLabel], n.Spec.CIDR, n.Status.CIDR))
		}
		sort.Strings(out)
		return out, nil
	}
	waitNetworks := func(what string, want ...string) {
		t.Helper()
		var got []string
		var err error
		for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
			if got, err = networks(); err == nil && strings.Join(got, "\n") == strings.Join(want, "\n") {
				return
			}
		}
		t.Fatalf("%s: networks %q (err %v), want %q", what, got, err, want)
	}

	// The pod CIDR overlaps the local one and is remapped; the external one is kept.
	waitNetworks("created",
		"b-external-172-16-0-0-16 external 172.16.0.0/16->172.16.0.0/16",
		"b-pod-10-0-0-0-16 pod 10.0.0.0/16->10.64.0.0/16")

	// A new external CIDR: the old one's Network goes (spec.cidr cannot change), a new one comes.
	if err := c.Get(ctx, client.ObjectKeyFromObject(conf), conf); err != nil {
		t.Fatal(err)
	}
	conf.Spec.Remote.CIDR.External = []netv1beta1.CIDR{"10.0.0.0/24"}
	if err := c.Update(ctx, conf); err != nil {
		t.Fatal(err)
	}
	waitNetworks("external CIDR changed",
		"b-external-10-0-0-0-24 external 10.0.0.0/24->10.65.0.0/24",
		"b-pod-10-0-0-0-16 pod 10.0.0.0/16->10.64.0.0/16")

	// The Configuration goes, and its Networks with it: in a foreground deletion, as
	// liqo_network_configuration deletes, the garbage collector removes the Networks first and
	// nothing writes them again meanwhile.
	if err := c.Delete(ctx, conf, client.PropagationPolicy(metav1.DeletePropagationForeground)); err != nil {
		t.Fatal(err)
	}
	waitNetworks("configuration deleted")
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		err := c.Get(ctx, client.ObjectKeyFromObject(conf), &netv1beta1.Configuration{})
		if apierrors.IsNotFound(err) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the Configuration is still there 30 s after its foreground deletion (%v)", err)
		}
	}
}
