package main

import (
	"context"
	"fmt"
	"io"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/peerkit/terraform-provider-liqo/controllers/identity"
	authv1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/authentication/v1beta1"
	corev1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/core/v1beta1"
	"github.com/peerkit/terraform-provider-liqo/internal/consts"
	"github.com/peerkit/terraform-provider-liqo/internal/peering"
	"github.com/peerkit/terraform-provider-liqo/internal/test/testenv"
)

// startManager runs the controller manager's real entry point against one cluster until the
// test ends.
func startManager(t *testing.T, cl *testenv.Cluster, args ...string) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	args = append([]string{"--kubeconfig", cl.KubeconfigPath, "--health-probe-bind-address", "0", "--metrics-bind-address", "0"}, args...)
	go func() { done <- run(ctx, args, io.Discard) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("controller manager of %s: %v", cl.Name, err)
		}
	})
}

// TestPeeringFromNothingToReadyNode: both clusters run the real controller manager; applying
// the objects of a peering on both sides, in seed 003's order (tenant namespaces, nonce,
// signed nonce, Tenant, Identity, ResourceSlice), yields a Ready virtual node on the consumer
// with the capacity the provider granted, and each side's ForeignCluster shows the other's
// role with its module conditions, as `kubectl get foreignclusters` prints them.
func TestPeeringFromNothingToReadyNode(t *testing.T) {
	env := testenv.New(t,
		testenv.ClusterOptions{Name: "consumer"},
		testenv.ClusterOptions{Name: "provider", ControllerManager: true, // the CSR signer
			Nodes: []testenv.NodeOptions{{Name: "worker-1", CPU: "8", Memory: "16Gi"}}},
	)
	cons, prov := env.Cluster("consumer"), env.Cluster("provider")
	ctx := t.Context()
	startManager(t, cons, "--cluster-id", "cl-consumer", "--pod-cidr", "10.200.0.0/16")
	startManager(t, prov, "--cluster-id", "cl-provider", "--pod-cidr", "10.100.0.0/16", "--share", "cpu=4,memory=8Gi,pods=110")

	// Tenant namespaces on both sides.
	const consNS, provNS = "liqo-tenant-cl-provider", "liqo-tenant-cl-consumer"
	for c, ns := range map[client.Client]*corev1.Namespace{
		cons.Client: {ObjectMeta: metav1.ObjectMeta{Name: consNS, Labels: map[string]string{consts.RemoteClusterIDLabel: "cl-provider", consts.TenantNamespaceLabel: "true"}}},
		prov.Client: {ObjectMeta: metav1.ObjectMeta{Name: provNS, Labels: map[string]string{consts.RemoteClusterIDLabel: "cl-consumer", consts.TenantNamespaceLabel: "true"}}},
	} {
		testenv.Poll(t, "the manager's CRDs, to create "+ns.Name, 90*time.Second, func(ctx context.Context) (bool, error) {
			return c.Create(ctx, ns) == nil, nil
		})
	}

	// The provider's nonce, signed by the consumer.
	if err := peering.AskNonce(ctx, prov.Client, provNS, "cl-consumer"); err != nil {
		t.Fatal(err)
	}
	n := &corev1.Secret{}
	testenv.Poll(t, "the provider's nonce", 90*time.Second, func(ctx context.Context) (bool, error) {
		return prov.Client.Get(ctx, client.ObjectKey{Namespace: provNS, Name: consts.NonceSecret}, n) == nil && len(n.Data[consts.NonceKey]) > 0, nil
	})
	signed := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: consNS, Name: consts.SignedNonceSecret},
		Data: map[string][]byte{consts.NonceKey: n.Data[consts.NonceKey]}}
	if err := cons.Client.Create(ctx, signed); err != nil {
		t.Fatal(err)
	}
	testenv.Poll(t, "the consumer's signature", 90*time.Second, func(ctx context.Context) (bool, error) {
		err := cons.Client.Get(ctx, client.ObjectKeyFromObject(signed), signed)
		return err == nil && len(signed.Data[consts.SignedNonceKey]) > 0, nil
	})

	// The Tenant on the provider; its issued identity on the consumer.
	tn := &authv1beta1.Tenant{ObjectMeta: metav1.ObjectMeta{Namespace: provNS, Name: "cl-consumer"}, Spec: authv1beta1.TenantSpec{
		ClusterID: "cl-consumer", AuthzPolicy: "KeysExchange", TenantCondition: authv1beta1.TenantConditionActive,
		PublicKey: signed.Data[consts.PublicKeySecretKey], Signature: signed.Data[consts.SignedNonceKey], CSR: signed.Data[consts.CSRKey]}}
	if err := prov.Client.Create(ctx, tn); err != nil {
		t.Fatal(err)
	}
	testenv.Poll(t, "the tenant's certificate", 90*time.Second, func(ctx context.Context) (bool, error) {
		err := prov.Client.Get(ctx, client.ObjectKeyFromObject(tn), tn)
		return err == nil && tn.Status.AuthParams != nil && len(tn.Status.AuthParams.SignedCRT) > 0, nil
	})
	id := &authv1beta1.Identity{ObjectMeta: metav1.ObjectMeta{Namespace: consNS, Name: "controlplane"}, Spec: authv1beta1.IdentitySpec{
		ClusterID: "cl-provider", Type: authv1beta1.ControlPlaneIdentityType, Namespace: provNS, AuthParams: *tn.Status.AuthParams}}
	if err := cons.Client.Create(ctx, id); err != nil {
		t.Fatal(err)
	}
	testenv.Poll(t, "the identity's kubeconfig", 90*time.Second, func(ctx context.Context) (bool, error) {
		return cons.Client.Get(ctx, client.ObjectKey{Namespace: consNS, Name: identity.SecretName(id.Name)}, &corev1.Secret{}) == nil, nil
	})

	// A ResourceSlice: replicated, accepted by the provider, a virtual node with the grant.
	providerID := corev1beta1.ClusterID("cl-provider")
	slice := &authv1beta1.ResourceSlice{ObjectMeta: metav1.ObjectMeta{Namespace: consNS, Name: "cl-provider",
		Labels:      map[string]string{consts.ReplicationLabel: "true", consts.RemoteClusterIDLabel: "cl-provider"},
		Annotations: map[string]string{consts.CreateVirtualNodeAnnotation: "true"}},
		Spec: authv1beta1.ResourceSliceSpec{ProviderClusterID: &providerID, Class: "default",
			Resources: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2"), corev1.ResourceMemory: resource.MustParse("4Gi"),
				corev1.ResourcePods: resource.MustParse("50")}}}
	if err := cons.Client.Create(ctx, slice); err != nil {
		t.Fatal(err)
	}
	node := &corev1.Node{}
	testenv.Poll(t, "a Ready virtual node", 90*time.Second, func(ctx context.Context) (bool, error) {
		if cons.Client.Get(ctx, client.ObjectKey{Name: "cl-provider"}, node) != nil {
			return false, nil
		}
		for _, c := range node.Status.Conditions {
			if c.Type == corev1.NodeReady {
				return c.Status == corev1.ConditionTrue, nil
			}
		}
		return false, nil
	})
	for res, want := range map[corev1.ResourceName]string{corev1.ResourceCPU: "2", corev1.ResourceMemory: "4Gi", corev1.ResourcePods: "50"} {
		if got := node.Status.Capacity[res]; got.String() != want {
			t.Errorf("virtual node capacity %s = %s, want the granted %s", res, got.String(), want)
		}
	}
	if node.Labels[consts.TypeLabel] != consts.VirtualNodeType || node.Labels[consts.RemoteClusterIDLabel] != "cl-provider" {
		t.Errorf("virtual node labels %v", node.Labels)
	}

	// Each side's ForeignCluster: role and module conditions.
	for _, side := range []struct {
		c      client.Client
		remote string
		role   corev1beta1.RoleType
	}{{cons.Client, "cl-provider", corev1beta1.ProviderRole}, {prov.Client, "cl-consumer", corev1beta1.ConsumerRole}} {
		fc := &corev1beta1.ForeignCluster{}
		testenv.Poll(t, fmt.Sprintf("the ForeignCluster of %s with role %s", side.remote, side.role), 90*time.Second, func(ctx context.Context) (bool, error) {
			if side.c.Get(ctx, client.ObjectKey{Name: side.remote}, fc) != nil || fc.Status.Role != side.role ||
				!fc.Status.Modules.Authentication.Enabled || !fc.Status.Modules.Offloading.Enabled {
				return false, nil
			}
			if side.role != corev1beta1.ProviderRole {
				return true, nil
			}
			ready := 0
			for _, c := range fc.Status.Modules.Offloading.Conditions {
				if (c.Type == corev1beta1.OffloadingVirtualNodeStatusCondition || c.Type == corev1beta1.OffloadingNodeStatusCondition) &&
					c.Status == corev1beta1.ConditionStatusReady {
					ready++
				}
			}
			return ready == 2, nil
		})
		if fc.Status.TenantNamespace.Local == "" {
			t.Errorf("ForeignCluster %s: no local tenant namespace in status", side.remote)
		}
	}

	// A cluster is not its own peer (slices name both clusters).
	for c, self := range map[client.Client]string{cons.Client: "cl-consumer", prov.Client: "cl-provider"} {
		if err := c.Get(ctx, client.ObjectKey{Name: self}, &corev1beta1.ForeignCluster{}); !apierrors.IsNotFound(err) {
			t.Errorf("a ForeignCluster for the local cluster %s: %v", self, err)
		}
	}

	// What an operator sees.
	bin, err := testenv.BinDir()
	if err != nil {
		t.Fatal(err)
	}
	for _, side := range []struct {
		cl   *testenv.Cluster
		want string
	}{{cons, "cl-provider   Provider"}, {prov, "cl-consumer   Consumer"}} {
		out, err := exec.CommandContext(ctx, filepath.Join(bin, "kubectl"), "--kubeconfig", side.cl.KubeconfigPath, "get", "foreignclusters").CombinedOutput()
		if err != nil {
			t.Fatalf("kubectl get foreignclusters: %v\n%s", err, out)
		}
		if !strings.HasPrefix(string(out), "NAME") || !strings.Contains(string(out), side.want) {
			t.Errorf("kubectl get foreignclusters on %s:\n%s\nwant a row %q", side.cl.Name, out, side.want)
		}
	}
}
