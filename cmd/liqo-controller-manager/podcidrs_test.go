package main

import (
	"context"
	"io"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/peerkit/terraform-provider-liqo/controllers/configuration"
	netv1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/networking/v1beta1"
	"github.com/peerkit/terraform-provider-liqo/internal/clusternet"
	"github.com/peerkit/terraform-provider-liqo/internal/test/testenv"
)

// TestPodCIDRFlag: --pod-cidr takes one CIDR, as always, or several: repeated, or separated by
// commas (upstream Liqo's podCIDRs), in the order given; an empty value (a chart's --pod-cidr=
// without a value) gives none. Pod CIDRs given twice, overlapping or malformed are refused,
// naming the flag.
func TestPodCIDRFlag(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{nil, nil},
		{[]string{"--pod-cidr="}, nil},
		{[]string{"--pod-cidr", "10.244.0.0/16"}, []string{"10.244.0.0/16"}},
		{[]string{"--pod-cidr=10.244.0.0/16,10.245.0.0/16"}, []string{"10.244.0.0/16", "10.245.0.0/16"}},
		{[]string{"--pod-cidr", "10.245.0.0/16", "--pod-cidr", "10.244.0.0/16, 10.246.0.0/24"},
			[]string{"10.245.0.0/16", "10.244.0.0/16", "10.246.0.0/24"}},
	} {
		o, err := parse(tc.args, io.Discard)
		if err != nil {
			t.Errorf("parse(%q): %v", tc.args, err)
			continue
		}
		if !slices.Equal(o.identity.PodCIDRs, tc.want) {
			t.Errorf("parse(%q): pod CIDRs %q, want %q", tc.args, o.identity.PodCIDRs, tc.want)
		}
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--pod-cidr", "10.244.0.0/16,10.244.0.0/16"}, "--pod-cidr 10.244.0.0/16 is given twice"},
		{[]string{"--pod-cidr", "10.244.0.0/16", "--pod-cidr", "10.244.1.0/24"}, "--pod-cidr 10.244.0.0/16 and 10.244.1.0/24 overlap"},
		{[]string{"--pod-cidr", "10.244.0.0/16,,10.245.0.0/16"}, `--pod-cidr "" is not a network CIDR`},
		{[]string{"--pod-cidr", "10.244.0.0/16,10.245.0.1/16"}, `--pod-cidr "10.245.0.1/16" is not a network CIDR`},
	} {
		if _, err := parse(tc.args, io.Discard); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("parse(%q) = %v, want an error containing %q", tc.args, err, tc.want)
		}
	}
}

// TestSeveralPodCIDRs: a manager given three pod CIDRs records a Network for each, and a peer's
// Configuration whose pod CIDRs collide with the second and third gets a range for each of those
// (the one colliding with nothing is kept).
func TestSeveralPodCIDRs(t *testing.T) {
	env := testenv.New(t, testenv.ClusterOptions{Name: "a", SkipLiqoCRDs: true})
	cl := env.Cluster("a")
	c, ctx := cl.Client, t.Context()
	startManager(t, cl, "--cluster-id", "cl-a", "--pod-cidr", "10.244.0.0/16", "--pod-cidr=10.245.0.0/16,10.246.0.0/24")

	want := []string{"10.244.0.0/16", "10.245.0.0/16", "10.246.0.0/24"}
	var got []string
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		nets, err := clusternet.List(ctx, c)
		if err != nil {
			return false, nil //nolint:nilerr // the CRDs may not be there yet
		}
		got = clusternet.PodCIDRs(nets)
		return slices.Equal(got, want), nil
	})
	if err != nil {
		t.Fatalf("the cluster's pod CIDRs read from its Networks: %q (%v), want %q", got, err, want)
	}

	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "t-b"}}); err != nil {
		t.Fatal(err)
	}
	conf := &netv1beta1.Configuration{ObjectMeta: metav1.ObjectMeta{Namespace: "t-b", Name: "b"},
		Spec: netv1beta1.ConfigurationSpec{Remote: netv1beta1.ClusterConfig{CIDR: netv1beta1.ClusterConfigCIDR{
			Pod: []netv1beta1.CIDR{"10.245.0.0/16", "172.16.0.0/16", "10.246.0.0/24"}}}}}
	if err := c.Create(ctx, conf); err != nil {
		t.Fatal(err)
	}
	wantPods := []netv1beta1.CIDR{"10.64.0.0/16", "172.16.0.0/16", "10.65.0.0/24"}
	err = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		if err := c.Get(ctx, client.ObjectKeyFromObject(conf), conf); err != nil {
			return false, err
		}
		return conf.Status.Remote != nil && meta.IsStatusConditionTrue(conf.Status.Conditions, configuration.ReadyCondition) &&
			slices.Equal(conf.Status.Remote.CIDR.Pod, wantPods), nil
	})
	if err != nil {
		t.Fatalf("the peer's pod CIDRs as this cluster sees them: status %+v, conditions %+v (%v); want %v",
			conf.Status.Remote, conf.Status.Conditions, err, wantPods)
	}
}
