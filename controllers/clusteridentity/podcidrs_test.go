package clusteridentity_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/peerkit/terraform-provider-liqo/controllers/clusteridentity"
	ipamv1alpha1 "github.com/peerkit/terraform-provider-liqo/internal/api/ipam/v1alpha1"
	"github.com/peerkit/terraform-provider-liqo/internal/clusternet"
	"github.com/peerkit/terraform-provider-liqo/internal/test/testenv"
)

// TestEnsureSeveralPodCIDRs: a cluster with several pod CIDRs (upstream Liqo v1.2's podCIDRs)
// gets one Network per pod CIDR, with upstream's name and labels, read back in name order by
// package clusternet and by upstream liqoctl; the Network of a previous version holding one of
// them is replaced. A pod CIDR can be added later; dropping a recorded one is refused, naming
// its Network; pod CIDRs given twice or overlapping are refused before anything is written; a
// deleted pod CIDR Network comes back.
func TestEnsureSeveralPodCIDRs(t *testing.T) {
	cl := unidentifiedCluster(t)
	c := cl.Client
	ctx := t.Context()
	// The previous version's Network of the second pod CIDR (named pod-cidr, ours).
	legacy := &ipamv1alpha1.Network{ObjectMeta: metav1.ObjectMeta{Namespace: "liqo", Name: "pod-cidr",
		Labels: map[string]string{"ipam.liqo.io/network-type": "pod-cidr", "app.kubernetes.io/managed-by": "liqo-controller-manager"}},
		Spec: ipamv1alpha1.NetworkSpec{CIDR: "10.245.0.0/16"}}
	if err := c.Create(ctx, legacy); err != nil {
		t.Fatal(err)
	}

	two := cfg
	two.PodCIDRs = []string{"10.244.0.0/16", "10.245.0.0/16"}
	if _, err := clusteridentity.Ensure(ctx, c, two); err != nil {
		t.Fatal(err)
	}
	checkNetworks(t, c, map[string]upstreamNetwork{
		"pod-cidr-10-244-0-0-16": {"10.244.0.0/16", "pod-cidr", true, true},
		"pod-cidr-10-245-0-0-16": {"10.245.0.0/16", "pod-cidr", true, true},
	})
	if err := c.Get(ctx, client.ObjectKeyFromObject(legacy), &ipamv1alpha1.Network{}); !apierrors.IsNotFound(err) {
		t.Errorf("the previous version's Network liqo/pod-cidr of the second pod CIDR: %v, want replaced (deleted)", err)
	}
	readPods := func() []string {
		t.Helper()
		nets, err := clusternet.List(ctx, c)
		if err != nil {
			t.Fatal(err)
		}
		return clusternet.PodCIDRs(nets)
	}
	if got := readPods(); !slices.Equal(got, two.PodCIDRs) {
		t.Errorf("pod CIDRs read back %v, want %v", got, two.PodCIDRs)
	}
	checkLiqoctlNetwork(t, cl.KubeconfigPath, two)

	// A third pod CIDR is added: its Network comes, the others stay.
	three := two
	three.PodCIDRs = []string{"10.244.0.0/16", "10.245.0.0/16", "10.246.0.0/24"}
	if _, err := clusteridentity.Ensure(ctx, c, three); err != nil {
		t.Fatalf("adding a pod CIDR: %v", err)
	}
	if got := readPods(); !slices.Equal(got, three.PodCIDRs) {
		t.Errorf("pod CIDRs after adding one: %v, want %v", got, three.PodCIDRs)
	}

	// Refusals, each naming the fix; nothing is written.
	for _, tc := range []struct {
		pods []string
		want string
	}{
		{[]string{"10.244.0.0/16"}, "network liqo/pod-cidr-10-245-0-0-16 has pod CIDR 10.245.0.0/16, not 10.244.0.0/16: " +
			"a cluster's CIDR cannot change under its peers; fix the flag (--pod-cidr; it takes several, so keep 10.245.0.0/16 and add others)"},
		{[]string{"10.244.0.0/16", "10.245.0.0/16", "10.247.0.0/16"}, "network liqo/pod-cidr-10-246-0-0-24 has pod CIDR 10.246.0.0/24, " +
			"not one of 10.244.0.0/16, 10.245.0.0/16, 10.247.0.0/16"},
		{[]string{"10.244.0.0/16", "10.244.128.0/17"}, "--pod-cidr 10.244.0.0/16 and 10.244.128.0/17 overlap"},
		{[]string{"10.244.0.0/16", "10.245.0.0/16", "10.244.0.0/16"}, "--pod-cidr 10.244.0.0/16 is given twice"},
		{[]string{"10.244.0.0/16", "10.248.0.1/16"}, `--pod-cidr "10.248.0.1/16" is not a network CIDR`},
		{[]string{"10.244.0.0/16", ""}, `--pod-cidr "" is not a network CIDR`},
	} {
		bad := three
		bad.PodCIDRs = tc.pods
		if _, err := clusteridentity.Ensure(ctx, c, bad); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Ensure with pod CIDRs %q = %v, want an error containing %q", tc.pods, err, tc.want)
		}
	}
	if got := readPods(); !slices.Equal(got, three.PodCIDRs) {
		t.Errorf("pod CIDRs after the refusals: %v, want %v unchanged", got, three.PodCIDRs)
	}

	// A pod CIDR Network deleted behind the controller's back comes back.
	testenv.StartManager(t, cl, func(mgr ctrl.Manager) error {
		return (&clusteridentity.Reconciler{Client: mgr.GetClient(), Config: three}).SetupWithManager(mgr)
	})
	if err := c.Delete(ctx, &ipamv1alpha1.Network{ObjectMeta: objectMeta("pod-cidr-10-245-0-0-16")}); err != nil {
		t.Fatal(err)
	}
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		n := &ipamv1alpha1.Network{}
		err := c.Get(ctx, client.ObjectKey{Namespace: "liqo", Name: "pod-cidr-10-245-0-0-16"}, n)
		return err == nil && n.Status.CIDR == "10.245.0.0/16", nil
	})
	if err != nil {
		t.Errorf("the deleted Network of the second pod CIDR did not come back: %v", err)
	}
}
