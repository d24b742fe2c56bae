package clusteridentity_test

import (
	"context"
	"os"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/peerkit/terraform-provider-liqo/controllers/clusteridentity"
	ipamv1alpha1 "github.com/peerkit/terraform-provider-liqo/internal/api/ipam/v1alpha1"
	"github.com/peerkit/terraform-provider-liqo/internal/consts"
	"github.com/peerkit/terraform-provider-liqo/internal/test/testenv"
)

// identified is a cluster whose identity Ensure(cfg) recorded, shared by the tests of a
// consumer's rights on a provider (each with its own consumer ID and namespaces), of the
// reconciler and of the CRDs' upgrade.
var identified = testenv.NewShared(func(ctx context.Context, env *testenv.Env) error {
	_, err := clusteridentity.Ensure(ctx, env.Clusters[0].Client, cfg)
	return err
}, testenv.ClusterOptions{Name: "provider"})

// unidentified is a cluster with our CRDs, shared by the tests of what Ensure does with the
// Networks a previous version left; each starts from no identity (unidentifiedCluster).
var unidentified = testenv.NewShared(nil, testenv.ClusterOptions{Name: "old"})

// TestMain stops the shared clusters when the package's tests end.
func TestMain(m *testing.M) {
	os.Exit(testenv.RunShared(m, identified, unidentified))
}

// unidentifiedCluster returns the shared cluster without an identity: the namespace liqo, with
// neither Networks nor the cluster ID ConfigMap (the cluster-scoped objects and the signing key
// an earlier Ensure wrote stay, as a previous version's would).
func unidentifiedCluster(t *testing.T) *testenv.Cluster {
	t.Helper()
	cl := unidentified.Env(t).Clusters[0]
	ctx := t.Context()
	if err := cl.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: consts.LiqoNamespace}}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	if err := cl.Client.DeleteAllOf(ctx, &ipamv1alpha1.Network{}, client.InNamespace(consts.LiqoNamespace)); err != nil {
		t.Fatal(err)
	}
	if err := cl.Client.Delete(ctx, &corev1.ConfigMap{ObjectMeta: objectMeta(consts.ClusterIDConfigMap)}); err != nil && !apierrors.IsNotFound(err) {
		t.Fatal(err)
	}
	return cl
}
