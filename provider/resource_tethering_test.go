package provider_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	authv1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/authentication/v1beta1"
	"github.com/peerkit/terraform-provider-liqo/internal/consts"
	"github.com/peerkit/terraform-provider-liqo/internal/tethering"
)

func tetheringConfig(foreign string) string {
	return providerBlock() + fmt.Sprintf(`
resource "liqo_tethering" "home" {
  cluster            = "consumer"
  foreign_cluster_id = %q
}
`, foreign)
}

// TestAccTetheringRefused: liqo_tethering is refused, with the reason and the fix, and writes
// nothing, when the home cluster offers resources to another cluster (a Tenant of another
// consumer: seed 004's rule), when it is tethered to another cluster already, and when it has no
// virtual node of the foreign cluster to run its workloads on; a slice of class tethered that
// asks for a quantity is refused at plan. (TestTethered in test/e2e runs the whole mode.)
func TestAccTetheringRefused(t *testing.T) {
	ctx := context.Background()
	c := cluster("consumer").Client
	noConfigMap := func() {
		t.Helper()
		err := c.Get(ctx, client.ObjectKey{Namespace: consts.LiqoNamespace, Name: consts.TetheringConfigMap}, &corev1.ConfigMap{})
		if !apierrors.IsNotFound(err) {
			t.Errorf("the tethering ConfigMap after a refused apply: %v; want none", err)
		}
	}
	create := func(objs ...client.Object) {
		t.Helper()
		for _, o := range objs {
			if err := c.Create(ctx, o); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = c.Delete(context.Background(), o) })
		}
	}
	step := func(config, want string, more ...string) {
		t.Helper()
		resource.Test(t, resource.TestCase{ProtoV6ProviderFactories: protoV6Providers, Steps: []resource.TestStep{
			{Config: config, ExpectError: offWrappedText(append([]string{want}, more...)...)}}})
	}

	step(tetheringConfig("cl-corp"), `has no virtual node of cl-corp`, `peer first with a liqo_peering whose consumer_cluster is this cluster`)
	noConfigMap()

	create(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "liqo-cl-corp", Labels: map[string]string{
		consts.TypeLabel: consts.VirtualNodeType, consts.RemoteClusterIDLabel: "cl-corp"}}})
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "liqo-tenant-cl-other"}}
	create(ns, &authv1beta1.Tenant{ObjectMeta: metav1.ObjectMeta{Namespace: ns.Name, Name: "cl-other"},
		Spec: authv1beta1.TenantSpec{ClusterID: "cl-other"}})
	step(tetheringConfig("cl-corp"), `the cluster offers resources to cl-other (Tenant liqo-tenant-cl-other/cl-other)`,
		`a tethered cluster offers resources to its foreign cluster only; unpeer cl-other first`)
	noConfigMap()
	if err := c.Delete(ctx, &authv1beta1.Tenant{ObjectMeta: metav1.ObjectMeta{Namespace: ns.Name, Name: "cl-other"}}); err != nil {
		t.Fatal(err)
	}

	if err := c.Get(ctx, client.ObjectKey{Name: consts.LiqoNamespace}, &corev1.Namespace{}); apierrors.IsNotFound(err) {
		create(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: consts.LiqoNamespace}})
	}
	create(tethering.ConfigMap(consts.LiqoNamespace, "cl-elsewhere"))
	step(tetheringConfig("cl-corp"), `the cluster is tethered to cl-elsewhere already`, `end that tethering first`)

	resource.Test(t, resource.TestCase{ProtoV6ProviderFactories: protoV6Providers, Steps: []resource.TestStep{{
		Config: providerBlock() + `
resource "liqo_peering" "p" {
  consumer_cluster     = "provider"
  provider_cluster     = "consumer"
  networking           = false
  resource_slice_class = "tethered"
  cpu                  = "1"
}
`, PlanOnly: true, ExpectError: offWrappedText(`cpu with a tethered slice`, `grants everything it shares to the cluster it is tethered`, `remove cpu`)}}})
}
