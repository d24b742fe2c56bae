package clusteridentity_test

import (
	"bytes"
	"context"
	"encoding/json"
	"maps"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/peerkit/terraform-provider-liqo/controllers/clusteridentity"
	authv1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/authentication/v1beta1"
	ipamv1alpha1 "github.com/peerkit/terraform-provider-liqo/internal/api/ipam/v1alpha1"
	netv1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/networking/v1beta1"
	"github.com/peerkit/terraform-provider-liqo/internal/clusternet"
	"github.com/peerkit/terraform-provider-liqo/internal/consts"
	"github.com/peerkit/terraform-provider-liqo/internal/signing"
	"github.com/peerkit/terraform-provider-liqo/internal/test/testenv"
)

const podCIDR = "10.244.0.0/16"

var cfg = clusteridentity.Config{ClusterID: "cl-a", PodCIDRs: []string{podCIDR}, ServiceCIDR: "10.96.0.0/12", ExternalCIDR: "10.70.0.0/16"}

func signingKey(t *testing.T, c client.Client) []byte {
	t.Helper()
	s := &corev1.Secret{}
	if err := c.Get(t.Context(), client.ObjectKey{Namespace: consts.LiqoNamespace, Name: consts.SigningKeySecret}, s); err != nil {
		t.Fatal(err)
	}
	if _, err := signing.ParsePrivate(s.Data[consts.PrivateKeySecretKey]); err != nil {
		t.Fatalf("signing key: %v", err)
	}
	return s.Data[consts.PrivateKeySecretKey]
}

// TestEnsure: on a cluster without anything of ours, Ensure installs the CRDs and records the
// identity; a second run changes nothing (same key); a different cluster ID is refused. Its own
// cluster: one without our CRDs, which no other test can share once Ensure installed them.
func TestEnsure(t *testing.T) {
	env := testenv.New(t, testenv.ClusterOptions{Name: "bare", SkipLiqoCRDs: true})
	c := env.Cluster("bare").Client
	ctx := t.Context()

	id, err := clusteridentity.Ensure(ctx, c, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if id != "cl-a" {
		t.Errorf("cluster ID %q, want cl-a", id)
	}
	if err := c.Get(ctx, client.ObjectKey{Name: "foreignclusters.core.liqo.io"}, &apiextensionsv1.CustomResourceDefinition{}); err != nil {
		t.Errorf("ForeignCluster CRD not installed: %v", err)
	}
	cm := &corev1.ConfigMap{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: consts.LiqoNamespace, Name: consts.ClusterIDConfigMap}, cm); err != nil || cm.Data[consts.ClusterIDKey] != "cl-a" {
		t.Errorf("cluster ID ConfigMap: %v %v", cm.Data, err)
	}
	key := signingKey(t, c)
	// Upstream v1.2's chart's names and labels, spelled out rather than built from consts.
	checkNetworks(t, c, map[string]upstreamNetwork{
		"pod-cidr-10-244-0-0-16": {podCIDR, "pod-cidr", true, true},
		"service-cidr":           {cfg.ServiceCIDR, "service-cidr", true, true},
		"external-cidr":          {cfg.ExternalCIDR, "external-cidr", true, false},
	})
	checkLiqoctlNetwork(t, env.Cluster("bare").KubeconfigPath, cfg)
	role := &rbacv1.ClusterRole{}
	if err := c.Get(ctx, client.ObjectKey{Name: clusteridentity.RemoteControlPlaneClusterRole}, role); err != nil || len(role.Rules) == 0 {
		t.Errorf("ClusterRole %s: %v %v", clusteridentity.RemoteControlPlaneClusterRole, role.Rules, err)
	}
	policy := &admissionregistrationv1.ValidatingAdmissionPolicy{}
	if err := c.Get(ctx, client.ObjectKey{Name: consts.ReflectedSecretsPolicy}, policy); err != nil || len(policy.Spec.Validations) == 0 {
		t.Errorf("ValidatingAdmissionPolicy %s: %v %v", consts.ReflectedSecretsPolicy, policy.Spec.Validations, err)
	}
	binding := &admissionregistrationv1.ValidatingAdmissionPolicyBinding{}
	if err := c.Get(ctx, client.ObjectKey{Name: consts.ReflectedSecretsPolicy}, binding); err != nil || binding.Spec.PolicyName != consts.ReflectedSecretsPolicy {
		t.Errorf("ValidatingAdmissionPolicyBinding %s: %v %v", consts.ReflectedSecretsPolicy, binding.Spec, err)
	}

	// Idempotent: same identity, same key; an empty cluster ID keeps the recorded one.
	if id, err := clusteridentity.Ensure(ctx, c, clusteridentity.Config{PodCIDRs: cfg.PodCIDRs}); err != nil || id != "cl-a" {
		t.Errorf("second Ensure: %q %v", id, err)
	}
	if !bytes.Equal(signingKey(t, c), key) {
		t.Error("signing key replaced by a second Ensure")
	}

	// The same external CIDR as a default (no --external-cidr): not marked not-remapped, as in
	// upstream's chart; set explicitly again, marked again.
	defaulted := cfg
	defaulted.ExternalCIDRDefault = true
	if _, err := clusteridentity.Ensure(ctx, c, defaulted); err != nil {
		t.Fatal(err)
	}
	checkNetworks(t, c, map[string]upstreamNetwork{"external-cidr": {cfg.ExternalCIDR, "external-cidr", false, false}})
	if _, err := clusteridentity.Ensure(ctx, c, cfg); err != nil {
		t.Fatal(err)
	}
	checkNetworks(t, c, map[string]upstreamNetwork{"external-cidr": {cfg.ExternalCIDR, "external-cidr", true, false}})

	// Refusals, each naming the fix.
	for _, tc := range []struct {
		cfg  clusteridentity.Config
		want string
	}{
		{clusteridentity.Config{ClusterID: "cl-b"}, `this cluster's ID is "cl-a"`},
		{clusteridentity.Config{PodCIDRs: []string{"10.245.0.0/16"}}, "has pod CIDR 10.244.0.0/16, not 10.245.0.0/16: a cluster's CIDR cannot change under its peers"},
		{clusteridentity.Config{ExternalCIDR: "10.71.0.0/16", ExternalCIDRDefault: true}, "(--external-cidr, empty, hence the default 10.71.0.0/16)"},
		{clusteridentity.Config{ClusterID: "Bad_ID"}, "is not a DNS label"},
		{clusteridentity.Config{PodCIDRs: []string{"10.0.0.1/16"}}, "--pod-cidr"},
	} {
		if _, err := clusteridentity.Ensure(ctx, c, tc.cfg); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Ensure(%+v) = %v, want an error containing %q", tc.cfg, err, tc.want)
		}
	}
}

// TestReconcilerRepairsDrift: objects deleted or edited behind the controller's back come back.
func TestReconcilerRepairsDrift(t *testing.T) {
	cl := identified.Env(t).Cluster("provider")
	ctx := t.Context()
	testenv.StartManager(t, cl, func(mgr ctrl.Manager) error {
		return (&clusteridentity.Reconciler{Client: mgr.GetClient(), Config: cfg}).SetupWithManager(mgr)
	})

	key := signingKey(t, cl.Client)
	if err := cl.Client.Delete(ctx, &corev1.ConfigMap{ObjectMeta: objectMeta(consts.ClusterIDConfigMap)}); err != nil {
		t.Fatal(err)
	}
	if err := cl.Client.Delete(ctx, &ipamv1alpha1.Network{ObjectMeta: objectMeta("pod-cidr-10-244-0-0-16")}); err != nil {
		t.Fatal(err)
	}
	role := &rbacv1.ClusterRole{}
	if err := cl.Client.Get(ctx, client.ObjectKey{Name: clusteridentity.RemoteControlPlaneClusterRole}, role); err != nil {
		t.Fatal(err)
	}
	role.Rules = append(role.Rules, rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"get"}})
	if err := cl.Client.Update(ctx, role); err != nil {
		t.Fatal(err)
	}
	if err := cl.Client.Delete(ctx, &admissionregistrationv1.ValidatingAdmissionPolicyBinding{ObjectMeta: metav1.ObjectMeta{Name: consts.ReflectedSecretsPolicy}}); err != nil {
		t.Fatal(err)
	}

	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		cm := &corev1.ConfigMap{}
		if err := cl.Client.Get(ctx, client.ObjectKey{Namespace: consts.LiqoNamespace, Name: consts.ClusterIDConfigMap}, cm); err != nil {
			return false, nil //nolint:nilerr // not back yet
		}
		n := &ipamv1alpha1.Network{}
		if err := cl.Client.Get(ctx, client.ObjectKey{Namespace: consts.LiqoNamespace, Name: "pod-cidr-10-244-0-0-16"}, n); err != nil {
			return false, nil //nolint:nilerr // not back yet
		}
		if err := cl.Client.Get(ctx, client.ObjectKey{Name: consts.ReflectedSecretsPolicy}, &admissionregistrationv1.ValidatingAdmissionPolicyBinding{}); err != nil {
			return false, nil //nolint:nilerr // not back yet
		}
		r := &rbacv1.ClusterRole{}
		if err := cl.Client.Get(ctx, client.ObjectKey{Name: clusteridentity.RemoteControlPlaneClusterRole}, r); err != nil {
			return false, err
		}
		for _, rule := range r.Rules {
			for _, res := range rule.Resources {
				if res == "secrets" {
					return false, nil
				}
			}
		}
		return cm.Data[consts.ClusterIDKey] == "cl-a", nil
	})
	if err != nil {
		t.Fatalf("identity not repaired: %v", err)
	}
	if !bytes.Equal(signingKey(t, cl.Client), key) {
		t.Error("signing key changed")
	}
}

func objectMeta(name string) metav1.ObjectMeta {
	return metav1.ObjectMeta{Namespace: consts.LiqoNamespace, Name: name}
}

// TestEnsureUpgradesOlderCRDs: a cluster that runs an older version of our CRDs (here the
// Tenant CRD without spec.csr) gets the current ones at start-up, and a field the old schema
// did not know is kept on objects from then on (the old schema would have pruned it). On the
// shared provider, whose Tenant CRD is put back to the older version first.
func TestEnsureUpgradesOlderCRDs(t *testing.T) {
	c := identified.Env(t).Cluster("provider").Client
	ctx := t.Context()
	old := &apiextensionsv1.CustomResourceDefinition{}
	if err := c.Get(ctx, client.ObjectKey{Name: "tenants.authentication.liqo.io"}, old); err != nil {
		t.Fatalf("the Tenant CRD: %v", err)
	}
	spec := old.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"]
	if _, ok := spec.Properties["csr"]; !ok {
		t.Fatal("the Tenant CRD has no spec.csr to remove")
	}
	delete(spec.Properties, "csr")
	old.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"] = spec
	if err := c.Update(ctx, old); err != nil {
		t.Fatal(err)
	}

	if _, err := clusteridentity.Ensure(ctx, c, cfg); err != nil {
		t.Fatal(err)
	}
	got := &apiextensionsv1.CustomResourceDefinition{}
	if err := c.Get(ctx, client.ObjectKey{Name: old.Name}, got); err != nil {
		t.Fatal(err)
	}
	if _, ok := got.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"].Properties["csr"]; !ok {
		t.Fatal("the Tenant CRD still lacks spec.csr after start-up")
	}
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "tenant-upgrade"}}); err != nil {
		t.Fatal(err)
	}
	tn := &authv1beta1.Tenant{ObjectMeta: metav1.ObjectMeta{Namespace: "tenant-upgrade", Name: "cl-b"},
		Spec: authv1beta1.TenantSpec{ClusterID: "cl-b", CSR: []byte("a request")}}
	// The API server may serve the old schema for a moment after the update.
	if err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		_ = c.Delete(ctx, tn)
		tn.ResourceVersion = ""
		if err := c.Create(ctx, tn); err != nil {
			return false, nil //nolint:nilerr // retried until the CRD serves
		}
		read := &authv1beta1.Tenant{}
		return c.Get(ctx, client.ObjectKeyFromObject(tn), read) == nil && string(read.Spec.CSR) == "a request", nil
	}); err != nil {
		t.Errorf("a Tenant's spec.csr after the upgrade: %v, want kept", err)
	}
}

// upstreamNetwork is one of a cluster's own Networks as upstream v1.2's chart writes it.
type upstreamNetwork struct {
	cidr, typ           string
	notRemapped, shared bool // labelled "true", or not labelled at all
}

// checkNetworks checks Networks of the liqo namespace, by name: spec and status CIDR, type
// label, not-remapped and shared labels.
func checkNetworks(t *testing.T, c client.Client, want map[string]upstreamNetwork) {
	t.Helper()
	flag := func(labels map[string]string, key string, want bool) bool {
		v, ok := labels[key]
		return ok == want && (!ok || v == "true")
	}
	for name, w := range want {
		n := &ipamv1alpha1.Network{}
		if err := c.Get(t.Context(), client.ObjectKey{Namespace: "liqo", Name: name}, n); err != nil {
			t.Errorf("network %s: %v", name, err)
			continue
		}
		if string(n.Spec.CIDR) != w.cidr || string(n.Status.CIDR) != w.cidr || n.Labels["ipam.liqo.io/network-type"] != w.typ ||
			!flag(n.Labels, "ipam.liqo.io/network-not-remapped", w.notRemapped) || !flag(n.Labels, "ipam.liqo.io/network-shared", w.shared) {
			t.Errorf("network %s: spec %s status %s labels %v, want %+v", name, n.Spec.CIDR, n.Status.CIDR, n.Labels, w)
		}
	}
}

// TestEnsureUpgradesNetworks: a cluster set up by a previous version (its pod CIDR Network named
// pod-cidr, every Network with the type label only) gets upstream's names and labels at start:
// the pod CIDR Network is replaced by pod-cidr-<cidr>, the others are relabelled in place. A
// peer's Networks in the liqo namespace are left alone and are not read as the cluster's; a
// pod-cidr Network that is not ours (upstream's chart's deprecated form) is left alone too.
func TestEnsureUpgradesNetworks(t *testing.T) {
	c := unidentifiedCluster(t).Client
	ctx := t.Context()
	network := func(name, cidr string, labels map[string]string) *ipamv1alpha1.Network {
		t.Helper()
		n := &ipamv1alpha1.Network{ObjectMeta: metav1.ObjectMeta{Namespace: "liqo", Name: name, Labels: labels},
			Spec: ipamv1alpha1.NetworkSpec{CIDR: netv1beta1.CIDR(cidr)}}
		if err := c.Create(ctx, n); err != nil {
			t.Fatal(err)
		}
		n.Status.CIDR = n.Spec.CIDR
		if err := c.Status().Update(ctx, n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	// What the previous version wrote: named after the type, the type label and ours only.
	previous := func(typ string) map[string]string {
		return map[string]string{"ipam.liqo.io/network-type": typ, "app.kubernetes.io/managed-by": "liqo-controller-manager"}
	}
	legacy := network("pod-cidr", podCIDR, previous("pod-cidr"))
	network("service-cidr", cfg.ServiceCIDR, previous("service-cidr"))
	network("external-cidr", cfg.ExternalCIDR, previous("external-cidr"))
	peerLabels := func(typ string) map[string]string {
		return map[string]string{"ipam.liqo.io/network-type": typ, "liqo.io/remote-cluster-id": "cl-peer"}
	}
	peerPod := network("pod-cidr-10-99-0-0-16", "10.99.0.0/16", peerLabels("pod-cidr"))
	network("external-cidr-cl-peer", "10.98.0.0/16", peerLabels("external-cidr"))

	// Another pod CIDR than the recorded one is refused, the old Network kept, no new one made.
	if _, err := clusteridentity.Ensure(ctx, c, clusteridentity.Config{ClusterID: "cl-a", PodCIDRs: []string{"10.245.0.0/16"}}); err == nil ||
		!strings.Contains(err.Error(), "network liqo/pod-cidr has pod CIDR 10.244.0.0/16, not 10.245.0.0/16") {
		t.Errorf("Ensure with another pod CIDR: %v, want refused", err)
	}
	if err := c.Get(ctx, client.ObjectKey{Namespace: "liqo", Name: "pod-cidr-10-245-0-0-16"}, &ipamv1alpha1.Network{}); !apierrors.IsNotFound(err) {
		t.Errorf("a Network for the refused pod CIDR: %v, want none", err)
	}

	if _, err := clusteridentity.Ensure(ctx, c, cfg); err != nil {
		t.Fatal(err)
	}
	if err := c.Get(ctx, client.ObjectKeyFromObject(legacy), &ipamv1alpha1.Network{}); !apierrors.IsNotFound(err) {
		t.Errorf("the previous version's Network liqo/pod-cidr: %v, want replaced (deleted)", err)
	}
	checkNetworks(t, c, map[string]upstreamNetwork{
		"pod-cidr-10-244-0-0-16": {podCIDR, "pod-cidr", true, true},
		"service-cidr":           {cfg.ServiceCIDR, "service-cidr", true, true},
		"external-cidr":          {cfg.ExternalCIDR, "external-cidr", true, false},
	})
	got := &ipamv1alpha1.Network{}
	if err := c.Get(ctx, client.ObjectKeyFromObject(peerPod), got); err != nil || !maps.Equal(got.Labels, peerPod.Labels) {
		t.Errorf("the peer's Network: %v, labels %v; want left as it was", err, got.Labels)
	}
	readOwn := func() ([]string, string) {
		t.Helper()
		nets, err := clusternet.List(ctx, c)
		if err != nil {
			t.Fatal(err)
		}
		ext, err := clusternet.ExternalCIDR(nets)
		if err != nil {
			t.Fatal(err)
		}
		return clusternet.PodCIDRs(nets), ext
	}
	if pods, ext := readOwn(); !slices.Equal(pods, []string{podCIDR}) || ext != cfg.ExternalCIDR {
		t.Errorf("own CIDRs read back: pod %v external %q, want [%s] %s", pods, ext, podCIDR, cfg.ExternalCIDR)
	}

	// A pod-cidr Network that is not ours, with the same CIDR: left alone, one pod CIDR still.
	foreign := network("pod-cidr", podCIDR, map[string]string{"ipam.liqo.io/network-type": "pod-cidr"})
	if _, err := clusteridentity.Ensure(ctx, c, cfg); err != nil {
		t.Fatal(err)
	}
	if err := c.Get(ctx, client.ObjectKeyFromObject(foreign), got); err != nil || got.UID != foreign.UID {
		t.Errorf("a pod-cidr Network not ours: %v, want left alone", err)
	}
	if pods, _ := readOwn(); !slices.Equal(pods, []string{podCIDR}) {
		t.Errorf("own pod CIDRs with two Networks of the same CIDR: %v, want [%s]", pods, podCIDR)
	}
}

// checkLiqoctlNetwork checks that upstream liqoctl v1.2.0 (LIQO_LIQOCTL, which `make test` sets;
// without it the check is left out) reads cfg's CIDRs from the cluster's Networks, finding them by
// label as it finds upstream's (the pod CIDRs in the Networks' name order).
func checkLiqoctlNetwork(t *testing.T, kubeconfig string, cfg clusteridentity.Config) {
	t.Helper()
	bin := os.Getenv("LIQO_LIQOCTL")
	if bin == "" {
		t.Log("LIQO_LIQOCTL is not set: upstream liqoctl's view of the Networks is not checked")
		return
	}
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	var stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, bin, "info", "--get", "network", "-o", "json", "--kubeconfig", kubeconfig)
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("liqoctl info --get network: %v\n%s", err, stderr.String())
	}
	var got struct {
		PodCIDRs     []string `json:"podCIDRs"`
		ServiceCIDR  string   `json:"serviceCIDR"`
		ExternalCIDR string   `json:"externalCIDR"`
	}
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("liqoctl info --get network: %v\n%s", err, out)
	}
	if !slices.Equal(got.PodCIDRs, cfg.PodCIDRs) || got.ServiceCIDR != cfg.ServiceCIDR || got.ExternalCIDR != cfg.ExternalCIDR {
		t.Errorf("liqoctl sees pod %v service %q external %q, want %v %s %s (stderr: %s)", got.PodCIDRs, got.ServiceCIDR,
			got.ExternalCIDR, cfg.PodCIDRs, cfg.ServiceCIDR, cfg.ExternalCIDR, stderr.String())
	}
}
