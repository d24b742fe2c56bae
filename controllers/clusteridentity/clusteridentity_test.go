package clusteridentity_test

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/peerkit/terraform-provider-liqo/controllers/clusteridentity"
	authv1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/authentication/v1beta1"
	"github.com/peerkit/terraform-provider-liqo/internal/api/crds"
	ipamv1alpha1 "github.com/peerkit/terraform-provider-liqo/internal/api/ipam/v1alpha1"
	"github.com/peerkit/terraform-provider-liqo/internal/consts"
	"github.com/peerkit/terraform-provider-liqo/internal/signing"
	"github.com/peerkit/terraform-provider-liqo/internal/testenv"
)

var cfg = clusteridentity.Config{ClusterID: "cl-a", PodCIDR: "10.244.0.0/16", ServiceCIDR: "10.96.0.0/12", ExternalCIDR: "10.70.0.0/16"}

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
// identity; a second run changes nothing (same key); a different cluster ID is refused.
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
	for name, want := range map[string]string{"pod-cidr": cfg.PodCIDR, "service-cidr": cfg.ServiceCIDR, "external-cidr": cfg.ExternalCIDR} {
		n := &ipamv1alpha1.Network{}
		if err := c.Get(ctx, client.ObjectKey{Namespace: consts.LiqoNamespace, Name: name}, n); err != nil {
			t.Errorf("network %s: %v", name, err)
			continue
		}
		if string(n.Spec.CIDR) != want || string(n.Status.CIDR) != want || n.Labels[consts.NetworkTypeLabel] != name {
			t.Errorf("network %s: spec %s status %s labels %v, want %s", name, n.Spec.CIDR, n.Status.CIDR, n.Labels, want)
		}
	}
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
	if id, err := clusteridentity.Ensure(ctx, c, clusteridentity.Config{PodCIDR: cfg.PodCIDR}); err != nil || id != "cl-a" {
		t.Errorf("second Ensure: %q %v", id, err)
	}
	if !bytes.Equal(signingKey(t, c), key) {
		t.Error("signing key replaced by a second Ensure")
	}

	// Refusals, each naming the fix.
	for _, tc := range []struct {
		cfg  clusteridentity.Config
		want string
	}{
		{clusteridentity.Config{ClusterID: "cl-b"}, `this cluster's ID is "cl-a"`},
		{clusteridentity.Config{PodCIDR: "10.245.0.0/16"}, "cannot change under its peers"},
		{clusteridentity.Config{ClusterID: "Bad_ID"}, "is not a DNS label"},
		{clusteridentity.Config{PodCIDR: "10.0.0.1/16"}, "--pod-cidr"},
	} {
		if _, err := clusteridentity.Ensure(ctx, c, tc.cfg); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Ensure(%+v) = %v, want an error containing %q", tc.cfg, err, tc.want)
		}
	}
}

// TestReconcilerRepairsDrift: objects deleted or edited behind the controller's back come back.
func TestReconcilerRepairsDrift(t *testing.T) {
	env := testenv.New(t, testenv.ClusterOptions{Name: "a"})
	cl := env.Cluster("a")
	ctx := t.Context()
	if _, err := clusteridentity.Ensure(ctx, cl.Client, cfg); err != nil {
		t.Fatal(err)
	}
	mgr, err := ctrl.NewManager(cl.Config, ctrl.Options{Scheme: cl.Client.Scheme(), Metrics: metricsserver.Options{BindAddress: "0"}})
	if err != nil {
		t.Fatal(err)
	}
	if err := (&clusteridentity.Reconciler{Client: mgr.GetClient(), Config: cfg}).SetupWithManager(mgr); err != nil {
		t.Fatal(err)
	}
	mctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- mgr.Start(mctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("manager: %v", err)
		}
	})

	key := signingKey(t, cl.Client)
	if err := cl.Client.Delete(ctx, &corev1.ConfigMap{ObjectMeta: objectMeta(consts.ClusterIDConfigMap)}); err != nil {
		t.Fatal(err)
	}
	if err := cl.Client.Delete(ctx, &ipamv1alpha1.Network{ObjectMeta: objectMeta("pod-cidr")}); err != nil {
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

	err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		cm := &corev1.ConfigMap{}
		if err := cl.Client.Get(ctx, client.ObjectKey{Namespace: consts.LiqoNamespace, Name: consts.ClusterIDConfigMap}, cm); err != nil {
			return false, nil //nolint:nilerr // not back yet
		}
		n := &ipamv1alpha1.Network{}
		if err := cl.Client.Get(ctx, client.ObjectKey{Namespace: consts.LiqoNamespace, Name: "pod-cidr"}, n); err != nil {
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
// did not know is kept on objects from then on (the old schema would have pruned it).
func TestEnsureUpgradesOlderCRDs(t *testing.T) {
	env := testenv.New(t, testenv.ClusterOptions{Name: "old", SkipLiqoCRDs: true})
	c := env.Cluster("old").Client
	ctx := t.Context()
	all, err := crds.All()
	if err != nil {
		t.Fatal(err)
	}
	var old *apiextensionsv1.CustomResourceDefinition
	for _, crd := range all {
		if crd.Name == "tenants.authentication.liqo.io" {
			old = crd.DeepCopy()
		}
	}
	if old == nil {
		t.Fatal("no Tenant CRD among ours")
	}
	spec := old.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"]
	if _, ok := spec.Properties["csr"]; !ok {
		t.Fatal("the Tenant CRD has no spec.csr to remove")
	}
	delete(spec.Properties, "csr")
	old.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"] = spec
	if err := c.Create(ctx, old); err != nil {
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
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "tenant-ns"}}); err != nil {
		t.Fatal(err)
	}
	tn := &authv1beta1.Tenant{ObjectMeta: metav1.ObjectMeta{Namespace: "tenant-ns", Name: "cl-b"},
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
