package offers_test

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	marketv1alpha1 "github.com/peerkit/terraform-provider-liqo/internal/api/market/v1alpha1"
	"github.com/peerkit/terraform-provider-liqo/internal/consts"
	"github.com/peerkit/terraform-provider-liqo/internal/offers"
	"github.com/peerkit/terraform-provider-liqo/internal/test/testenv"
)

// TestEnsureDefault: the default offer of the manager's flags is made, follows a new spec,
// moves with its name (the former one withdrawn) and is withdrawn with no spec; an offer the
// manager did not make is never touched. A spec the flags give with an unknown field or an
// invalid term is refused.
func TestEnsureDefault(t *testing.T) {
	env := testenv.New(t, testenv.ClusterOptions{Name: "provider"})
	c, ctx := env.Clusters[0].Client, t.Context()
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: consts.LiqoNamespace}}); err != nil {
		t.Fatal(err)
	}
	mine := &marketv1alpha1.Offer{ObjectMeta: metav1.ObjectMeta{Namespace: consts.LiqoNamespace, Name: "by-terraform"}, Spec: *validSpec()}
	if err := c.Create(ctx, mine); err != nil {
		t.Fatal(err)
	}
	spec, err := offers.ParseSpec(`{"resources":{"cpu":"8"},"currency":"EUR","prices":{"cpu":{"amount":"0.02"}}}`)
	if err != nil {
		t.Fatal(err)
	}
	exists := func(name string) bool {
		err := c.Get(ctx, client.ObjectKey{Namespace: consts.LiqoNamespace, Name: name}, &marketv1alpha1.Offer{})
		if err != nil && !apierrors.IsNotFound(err) {
			t.Fatal(err)
		}
		return err == nil
	}
	steps := []struct {
		name string
		spec *marketv1alpha1.OfferSpec
		want map[string]bool
	}{
		{"default", spec, map[string]bool{"default": true, "by-terraform": true}},
		{"default", spec, map[string]bool{"default": true, "by-terraform": true}},
		{"renamed", spec, map[string]bool{"default": false, "renamed": true, "by-terraform": true}},
		{"renamed", nil, map[string]bool{"default": false, "renamed": false, "by-terraform": true}},
	}
	for i, s := range steps {
		if err := offers.EnsureDefault(ctx, c, consts.LiqoNamespace, s.name, s.spec); err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
		for name, want := range s.want {
			if got := exists(name); got != want {
				t.Errorf("step %d: offer %s exists %t, want %t", i, name, got, want)
			}
		}
	}
	for _, bad := range []string{`{"resources":{"cpu":"8"},"price":{}}`, `{"resources":{"cpu":"8"},"currency":"XYZ"}`, `not json`} {
		if _, err := offers.ParseSpec(bad); err == nil {
			t.Errorf("ParseSpec(%s) accepted", bad)
		}
	}
}
