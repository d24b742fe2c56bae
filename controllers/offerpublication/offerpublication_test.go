package offerpublication_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/peerkit/terraform-provider-liqo/controllers/offerpublication"
	marketv1alpha1 "github.com/peerkit/terraform-provider-liqo/internal/api/market/v1alpha1"
	"github.com/peerkit/terraform-provider-liqo/internal/consts"
	"github.com/peerkit/terraform-provider-liqo/internal/peerrbac"
	"github.com/peerkit/terraform-provider-liqo/internal/test/testenv"
)

const wait = 30 * time.Second

// offer is an Offer in the Liqo namespace of CPUs at price, for consumers (none: all).
func offer(name, price string, consumers ...string) *marketv1alpha1.Offer {
	return &marketv1alpha1.Offer{
		ObjectMeta: metav1.ObjectMeta{Namespace: consts.LiqoNamespace, Name: name},
		Spec: marketv1alpha1.OfferSpec{
			Resources: corev1.ResourceList{"cpu": resource.MustParse("4"), "nvidia.com/gpu": resource.MustParse("1")},
			Currency:  "EUR", Prices: map[corev1.ResourceName]marketv1alpha1.Price{"cpu": {Amount: price}},
			Consumers: consumers,
		},
	}
}

// published lists, by tenant namespace, the names of the copies there and their price of cpu.
func published(ctx context.Context, c client.Client) (map[string][]string, error) {
	list := &marketv1alpha1.OfferList{}
	if err := c.List(ctx, list, client.HasLabels{consts.OfferOriginLabel}); err != nil {
		return nil, err
	}
	out := map[string][]string{}
	for _, o := range list.Items {
		out[o.Namespace] = append(out[o.Namespace], fmt.Sprintf("%s@%s%v", o.Name, o.Spec.Prices["cpu"].Amount, o.Spec.Consumers))
	}
	for _, v := range out {
		slices.Sort(v)
	}
	return out, nil
}

// wantPublished waits until the copies are want (by namespace: "name@price[consumers]").
func wantPublished(t *testing.T, c client.Client, what string, want map[string][]string) {
	t.Helper()
	testenv.EventuallyOK(t, what, wait, func() error {
		got, err := published(t.Context(), c)
		if err != nil {
			return err
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			return fmt.Errorf("copies %v, want %v", got, want)
		}
		return nil
	})
}

// tenantNamespace creates the tenant namespace of consumer id.
func tenantNamespace(t *testing.T, c client.Client, id string) {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: consts.TenantNamespace(id), Labels: consts.TenantNamespaceLabels(id)}}
	if err := c.Create(t.Context(), ns); err != nil {
		t.Fatal(err)
	}
}

// TestPublication: the provider's Offers reach the tenant namespaces of the consumers they are
// made to, follow their terms and their list of consumers, reach new consumers, and go when
// withdrawn (also while the manager is down); an invalid Offer is not published.
func TestPublication(t *testing.T) {
	env := testenv.New(t, testenv.ClusterOptions{Name: "provider"})
	c, ctx := env.Clusters[0].Client, t.Context()
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: consts.LiqoNamespace}}); err != nil {
		t.Fatal(err)
	}
	tenantNamespace(t, c, "cl-a")
	tenantNamespace(t, c, "cl-b")
	setup := func(mgr manager.Manager) error {
		return (&offerpublication.Reconciler{Client: mgr.GetClient(), LiqoNamespace: consts.LiqoNamespace}).SetupWithManager(mgr)
	}
	stop := testenv.StartManager(t, env.Clusters[0], setup)
	all, onlyA := offer("all", "0.02"), offer("only-a", "0.05", "cl-a", "cl-b2")
	for _, o := range []*marketv1alpha1.Offer{all, onlyA} {
		if err := c.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	a, b := consts.TenantNamespace("cl-a"), consts.TenantNamespace("cl-b")
	wantPublished(t, c, "offers published", map[string][]string{a: {"all@0.02[]", "only-a@0.05[cl-a]"}, b: {"all@0.02[]"}})

	all.Spec.Prices["cpu"] = marketv1alpha1.Price{Amount: "0.03"}
	onlyA.Spec.Consumers = []string{"cl-b"}
	for _, o := range []*marketv1alpha1.Offer{all, onlyA} {
		if err := c.Update(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	wantPublished(t, c, "offers updated", map[string][]string{a: {"all@0.03[]"}, b: {"all@0.03[]", "only-a@0.05[cl-b]"}})

	tenantNamespace(t, c, "cl-c")
	cNS := consts.TenantNamespace("cl-c")
	wantPublished(t, c, "offer reaches a new consumer",
		map[string][]string{a: {"all@0.03[]"}, b: {"all@0.03[]", "only-a@0.05[cl-b]"}, cNS: {"all@0.03[]"}})

	bad := offer("bad", "0.01")
	bad.Spec.Currency = "XYZ" // the CRD's pattern lets it through; offers.Validate does not
	if err := c.Create(ctx, bad); err != nil {
		t.Fatal(err)
	}
	if err := c.Delete(ctx, all); err != nil {
		t.Fatal(err)
	}
	wantPublished(t, c, "offer withdrawn", map[string][]string{b: {"only-a@0.05[cl-b]"}})

	stop()
	if err := c.Delete(ctx, onlyA); err != nil {
		t.Fatal(err)
	}
	testenv.StartManager(t, env.Clusters[0], setup)
	wantPublished(t, c, "offer deleted while the manager was down withdrawn", map[string][]string{})
}

// TestCRDRefuses: the API server refuses an Offer with a negative price, a price or a bound of a
// resource not offered, prices without a currency, or nothing offered.
func TestCRDRefuses(t *testing.T) {
	env := testenv.New(t, testenv.ClusterOptions{Name: "provider"})
	c, ctx := env.Clusters[0].Client, t.Context()
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: consts.LiqoNamespace}}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		mutate func(o *marketv1alpha1.Offer)
		want   string
	}{
		{func(o *marketv1alpha1.Offer) { o.Spec.Prices["cpu"] = marketv1alpha1.Price{Amount: "-1"} }, "spec.prices.cpu.amount"},
		{func(o *marketv1alpha1.Offer) { o.Spec.Prices["memory"] = marketv1alpha1.Price{Amount: "1"} }, "every priced resource must be offered"},
		{func(o *marketv1alpha1.Offer) { o.Spec.Minimum = corev1.ResourceList{"pods": resource.MustParse("1")} }, "every resource in minimum"},
		{func(o *marketv1alpha1.Offer) { o.Spec.Currency = "" }, "prices need a currency"},
		{func(o *marketv1alpha1.Offer) { o.Spec.Currency = "eur" }, "spec.currency"},
		{func(o *marketv1alpha1.Offer) { o.Spec.Resources = corev1.ResourceList{}; o.Spec.Prices = nil }, "at least one resource"},
	} {
		o := offer("refused", "1")
		tc.mutate(o)
		err := c.Create(ctx, o)
		if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("creating %+v: %v, want it invalid saying %q", o.Spec, err, tc.want)
		}
	}
}

// TestConsumerReadsOnlyItsOffers: with the rules the provider grants a consumer's control plane
// in its tenant namespace, the consumer reads the Offers published there, and no other: not
// another consumer's, not the provider's originals; and it may not write one.
func TestConsumerReadsOnlyItsOffers(t *testing.T) {
	env := testenv.New(t, testenv.ClusterOptions{Name: "provider"})
	cl := env.Clusters[0]
	c, ctx := cl.Client, t.Context()
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: consts.LiqoNamespace}}); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"cl-a", "cl-b"} {
		tenantNamespace(t, c, id)
		ns := consts.TenantNamespace(id)
		objs := []client.Object{
			&rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "controlplane"}, Rules: peerrbac.ControlPlaneRules()},
			&rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "controlplane"},
				RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "controlplane"},
				Subjects: []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: id}}},
		}
		for _, o := range objs {
			if err := c.Create(ctx, o); err != nil {
				t.Fatal(err)
			}
		}
	}
	testenv.StartManager(t, cl, func(mgr manager.Manager) error {
		return (&offerpublication.Reconciler{Client: mgr.GetClient()}).SetupWithManager(mgr)
	})
	if err := c.Create(ctx, offer("for-b", "1", "cl-b")); err != nil {
		t.Fatal(err)
	}
	wantPublished(t, c, "offer published to cl-b", map[string][]string{consts.TenantNamespace("cl-b"): {"for-b@1[cl-b]"}})
	asA, asB := cl.UserClient(t, "cl-a", consts.ConsumerGroup), cl.UserClient(t, "cl-b", consts.ConsumerGroup)
	list := &marketv1alpha1.OfferList{}
	if err := asB.List(ctx, list, client.InNamespace(consts.TenantNamespace("cl-b"))); err != nil || len(list.Items) != 1 {
		t.Errorf("cl-b lists its offers: %v, %d items, want 1", err, len(list.Items))
	}
	if err := asA.List(ctx, list, client.InNamespace(consts.TenantNamespace("cl-a"))); err != nil || len(list.Items) != 0 {
		t.Errorf("cl-a, to which no offer is made, lists its offers: %v, %d items, want none", err, len(list.Items))
	}
	for what, err := range map[string]error{
		"read cl-b's offers":             asA.List(ctx, list, client.InNamespace(consts.TenantNamespace("cl-b"))),
		"read the provider's offers":     asB.List(ctx, list, client.InNamespace(consts.LiqoNamespace)),
		"write an offer of its own":      asB.Create(ctx, &marketv1alpha1.Offer{ObjectMeta: metav1.ObjectMeta{Namespace: consts.TenantNamespace("cl-b"), Name: "forged"}, Spec: offer("x", "0").Spec}),
		"list offers of every namespace": asB.List(ctx, list),
	} {
		if !apierrors.IsForbidden(err) {
			t.Errorf("a consumer may %s: %v, want forbidden", what, err)
		}
	}
}
