package provider_test

import (
	"fmt"
	"regexp"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	ipamv1alpha1 "github.com/peerkit/terraform-provider-liqo/internal/api/ipam/v1alpha1"
	networkingv1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/networking/v1beta1"
)

// TestAccClusterDataSourceLiqoNamespace: a cluster whose Liqo is installed in another namespace
// than `liqo` (`liqoctl install -n liqo-system`: the cluster-ID ConfigMap and the Networks live
// there) is read with liqo_namespace, set on the clusters entry or, as the default of every
// entry, on the provider block; a namespace that is not a DNS label fails at plan, and one
// without Liqo fails naming the ConfigMap looked for and the attribute to set.
func TestAccClusterDataSourceLiqoNamespace(t *testing.T) {
	const ns, addr = "liqo-system", "data.liqo_cluster.p"
	c := cluster("provider").Client
	offCreateOwned(t, c, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
	offCreateOwned(t, c, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "liqo-clusterid-configmap"},
		Data: map[string]string{"CLUSTER_ID": "cl-ns-provider"}})
	for name, n := range map[string][2]string{"pod-cidr-10-210-0-0-16": {"pod-cidr", "10.210.0.0/16"}, "external-cidr": {"external-cidr", "10.211.0.0/16"}} {
		offCreateOwned(t, c, &ipamv1alpha1.Network{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{"ipam.liqo.io/network-type": n[0]}},
			Spec:       ipamv1alpha1.NetworkSpec{CIDR: networkingv1beta1.CIDR(n[1])}})
	}
	cfg := func(blockNS, entryNS string) string {
		attr := func(v string) string {
			if v == "" {
				return ""
			}
			return fmt.Sprintf("liqo_namespace = %q", v)
		}
		return fmt.Sprintf(`
provider "liqo" {
  %s
  clusters = {
    provider = {
      config_path = %q
      %s
    }
  }
}
`, attr(blockNS), cluster("provider").KubeconfigPath, attr(entryNS)) + clusterDataSourceConfig
	}
	read := []statecheck.StateCheck{
		statecheck.ExpectKnownValue(addr, tfjsonpath.New("cluster_id"), knownvalue.StringExact("cl-ns-provider")),
		statecheck.ExpectKnownValue(addr, tfjsonpath.New("pod_cidrs"), knownvalue.ListExact([]knownvalue.Check{knownvalue.StringExact("10.210.0.0/16")})),
		statecheck.ExpectKnownValue(addr, tfjsonpath.New("external_cidr"), knownvalue.StringExact("10.211.0.0/16")),
	}
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: protoV6Providers,
		Steps: []resource.TestStep{
			{Config: cfg("", ns), ConfigStateChecks: read},
			{Config: cfg(ns, ""), ConfigStateChecks: read},
			{Config: cfg("", "Liqo_System"), PlanOnly: true, ExpectError: regexp.MustCompile(`(?s)liqo_namespace.*must\s+be\s+a\s+DNS\s+label`)},
			{
				Config:      cfg(ns, "nowhere"),
				ExpectError: regexp.MustCompile(`(?s)has\s+no\s+cluster\s+ID\s+\(ConfigMap\s+nowhere/liqo-clusterid-configmap.*set\s+liqo_namespace\s+to\s+the\s+namespace\s+Liqo\s+is\s+installed\s+in`),
			},
		},
	})
}
