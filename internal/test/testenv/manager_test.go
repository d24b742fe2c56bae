package testenv_test

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/peerkit/terraform-provider-liqo/internal/api"
	"github.com/peerkit/terraform-provider-liqo/internal/test/testenv"
)

// newManagers makes n managers with NewManager for an address nothing answers at.
func newManagers(t *testing.T, n int) []manager.Manager {
	t.Helper()
	scheme, err := api.NewScheme()
	if err != nil {
		t.Fatal(err)
	}
	var mgrs []manager.Manager
	for range n {
		mgr, err := testenv.NewManager(&rest.Config{Host: "https://127.0.0.1:1"}, scheme)
		if err != nil {
			t.Fatal(err)
		}
		mgrs = append(mgrs, mgr)
	}
	return mgrs
}

// TestNewManagerSameControllers: managers made by NewManager in one process may register
// controllers of the same name.
func TestNewManagerSameControllers(t *testing.T) {
	nothing := reconcile.Func(func(context.Context, reconcile.Request) (reconcile.Result, error) { return reconcile.Result{}, nil })
	for _, mgr := range newManagers(t, 2) {
		if err := ctrl.NewControllerManagedBy(mgr).Named("same").For(&corev1.ConfigMap{}).Complete(nothing); err != nil {
			t.Fatal(err)
		}
	}
}

// TestRunManager: managers made by NewManager start side by side (no metrics or probe server
// binds a port) and stop when told to; stop can be called more than once, the test's cleanup
// calling it again.
func TestRunManager(t *testing.T) {
	mgrs := newManagers(t, 2)
	stop := testenv.RunManager(t, "first manager", mgrs[0])
	testenv.RunManager(t, "second manager", mgrs[1])
	stop()
	stop()
}
