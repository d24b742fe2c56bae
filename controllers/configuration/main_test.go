package configuration_test

import (
	"context"
	"os"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ipamv1alpha1 "github.com/peerkit/terraform-provider-liqo/internal/api/ipam/v1alpha1"
	netv1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/networking/v1beta1"
	"github.com/peerkit/terraform-provider-liqo/internal/test/testenv"
)

// plain is a cluster without a controller manager, shared by the tests of the allocation, one at
// a time: every Configuration of the cluster and the Networks of its liqo namespace count as in
// use, so each test leaves none behind (namespaces).
var plain = testenv.NewShared(nil, testenv.ClusterOptions{Name: "a"})

// TestMain stops the shared cluster when the package's tests end.
func TestMain(m *testing.M) {
	os.Exit(testenv.RunShared(m, plain))
}

// namespaces creates the namespaces a test of the shared cluster uses (an earlier test may have
// left them, empty: nothing finishes deleting a namespace without a controller manager) and
// deletes their Configurations and Networks when the test ends. Called before the test starts a
// manager, that deletion runs once the manager stopped: nothing writes them again.
func namespaces(t *testing.T, c client.Client, names ...string) {
	t.Helper()
	for _, ns := range names {
		if err := c.Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatalf("creating namespace %s: %v", ns, err)
		}
	}
	t.Cleanup(func() {
		for _, ns := range names {
			for _, o := range []client.Object{&netv1beta1.Configuration{}, &ipamv1alpha1.Network{}} {
				if err := c.DeleteAllOf(context.Background(), o, client.InNamespace(ns)); err != nil {
					t.Errorf("deleting the %Ts of namespace %s: %v", o, ns, err)
				}
			}
		}
	})
}
