package forge_test

import (
	"encoding/json"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	netv1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/networking/v1beta1"
	"github.com/peerkit/terraform-provider-liqo/internal/consts"
	"github.com/peerkit/terraform-provider-liqo/internal/forge"
)

// TestMasqueradeBypass: the nodes' SNAT table of a peering is upstream's: a nat chain
// pre-postrouting at postrouting, priority 99; per local pod CIDR and peer CIDR a rule keeping a
// pod's source, per peer CIDR one rewriting any other source to the unknown-source address.
func TestMasqueradeBypass(t *testing.T) {
	cfg := &netv1beta1.Configuration{ObjectMeta: metav1.ObjectMeta{Name: "provider"}}
	fw := &netv1beta1.FirewallConfiguration{}
	forge.MutateMasqueradeBypass(fw, cfg, forge.MasqueradeBypassOptions{LocalPodCIDRs: []string{"10.244.0.0/16"},
		UnknownSourceIP: "10.70.0.0", RemotePodCIDRs: []string{"10.71.0.0/16"}, RemoteExternalCIDR: "10.72.0.0/16"})
	got, err := json.Marshal(fw.Spec.Table)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"name":"provider-masquerade-bypass","chains":[{"name":"pre-postrouting","rules":{"natRules":[` +
		`{"name":"podcidr-provider-10-244-0-0-16-10-71-0-0-16","match":[{"op":"eq","ip":{"value":"10.71.0.0/16","position":"dst"}},{"op":"eq","ip":{"value":"10.244.0.0/16","position":"src"}}],"natType":"snat","to":"10.244.0.0/16"},` +
		`{"name":"service-nodeport-provider-10-71-0-0-16","match":[{"op":"eq","ip":{"value":"10.71.0.0/16","position":"dst"}},{"op":"neq","ip":{"value":"10.244.0.0/16","position":"src"}}],"natType":"snat","to":"10.70.0.0"},` +
		`{"name":"podcidr-provider-ext-10-244-0-0-16","match":[{"op":"eq","ip":{"value":"10.72.0.0/16","position":"dst"}},{"op":"eq","ip":{"value":"10.244.0.0/16","position":"src"}}],"natType":"snat","to":"10.244.0.0/16"},` +
		`{"name":"service-nodeport-provider-ext","match":[{"op":"eq","ip":{"value":"10.72.0.0/16","position":"dst"}},{"op":"neq","ip":{"value":"10.244.0.0/16","position":"src"}}],"natType":"snat","to":"10.70.0.0"}` +
		`]},"type":"nat","policy":"accept","hook":"postrouting","priority":99}],"family":"IPV4"}`
	if string(got) != want {
		t.Errorf("table:\n%s\nwant\n%s", got, want)
	}
	if fw.Labels["networking.liqo.io/firewall-category"] != "fabric" || fw.Labels["networking.liqo.io/firewall-subcategory"] != "all-nodes" {
		t.Errorf("labels %v", fw.Labels)
	}
}

// TestGatewayNodeRoutes: a gateway's routes to a node: the node's internal address on the link
// of the node's interface, then a /32 per pod via it for traffic from the peer, sorted by pod.
func TestGatewayNodeRoutes(t *testing.T) {
	in := &netv1beta1.InternalNode{ObjectMeta: metav1.ObjectMeta{Name: "worker-1"}}
	forge.MutateInternalNode(in, "liqo.abcdefghij", "10.80.0.2")
	rc := &netv1beta1.RouteConfiguration{}
	forge.MutateGatewayNodeRouteConfiguration(rc, in, []forge.NodePod{{Name: "b", Namespace: "x", IP: "10.244.1.6"}, {Name: "a", Namespace: "x", IP: "10.244.1.5"}})
	r := rc.Spec.Table.Rules
	if rc.Spec.Table.Name != "worker-1" || len(r) != 2 || string(*r[0].Dst) != "10.80.0.2/32" || *r[0].Routes[0].Dev != "liqo.abcdefghij" ||
		*r[1].Iif != "liqo-tunnel" || len(r[1].Routes) != 2 || string(*r[1].Routes[0].Dst) != "10.244.1.5/32" || *r[1].Routes[0].Gw != "10.80.0.2" {
		data, _ := json.Marshal(rc.Spec)
		t.Errorf("routes %s", data)
	}
	// One per node even without a peering: uninstall must find it the manager's own.
	if rc.Labels[consts.ManagedByLabel] != consts.ManagedByControllerManager {
		t.Errorf("labels %v: want %s=%s", rc.Labels, consts.ManagedByLabel, consts.ManagedByControllerManager)
	}
	if !strings.HasSuffix(forge.GatewayNodeRouteConfigurationName("worker-1"), "-gw-node") {
		t.Error("name")
	}
}

// TestNodePortRouting: the gateways' NodePort routing is upstream's: a ctmark rule per node
// (named after it, on its link, the mark as value) that NodePortMarks reads back, the restore of
// the mark for answers from liqo-tunnel, and per node a rule on its mark routing the unknown
// source back to the node's internal address.
func TestNodePortRouting(t *testing.T) {
	fw := &netv1beta1.FirewallConfiguration{}
	forge.MutateNodePortFirewall(fw, []forge.NodeMark{{Node: "w2", GatewayInterface: "liqo.w2", Mark: 2}, {Node: "w1", GatewayInterface: "liqo.w1", Mark: 1}}, "10.70.0.0")
	got, err := json.Marshal(fw.Spec.Table)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"name":"service-nodeport-routing","chains":[{"name":"mark-to-conntrack","rules":{"filterRules":[` +
		`{"name":"w1","counter":true,"match":[{"op":"eq","ip":{"value":"10.70.0.0","position":"src"}},{"op":"eq","dev":{"value":"liqo.w1","position":"in"}}],"action":"ctmark","value":"1"},` +
		`{"name":"w2","counter":true,"match":[{"op":"eq","ip":{"value":"10.70.0.0","position":"src"}},{"op":"eq","dev":{"value":"liqo.w2","position":"in"}}],"action":"ctmark","value":"2"}` +
		`]},"type":"filter","policy":"accept","hook":"forward","priority":0},{"name":"conntrack-mark-to-meta-mark","rules":{"filterRules":[` +
		`{"name":"conntrack-mark-to-meta-mark","counter":true,"match":[{"op":"eq","ip":{"value":"10.70.0.0","position":"dst"}},{"op":"eq","dev":{"value":"liqo-tunnel","position":"in"}}],"action":"metamarkfromctmark"}` +
		`]},"type":"filter","policy":"accept","hook":"prerouting","priority":0}],"family":"IPV4"}`
	if string(got) != want {
		t.Errorf("table:\n%s\nwant\n%s", got, want)
	}
	if m := forge.NodePortMarks(fw); len(m) != 2 || m["w1"] != 1 || m["w2"] != 2 {
		t.Errorf("NodePortMarks = %v; want w1:1 w2:2", m)
	}
	in := &netv1beta1.InternalNode{ObjectMeta: metav1.ObjectMeta{Name: "w1"}}
	forge.MutateInternalNode(in, "liqo.w1", "10.80.0.2")
	rc := &netv1beta1.RouteConfiguration{}
	forge.MutateNodePortRouteConfiguration(rc, in, 1, "10.70.0.0")
	r := rc.Spec.Table.Rules
	if rc.Spec.Table.Name != "w1-service-nodeport-routing" || len(r) != 1 || *r[0].FwMark != 1 || string(*r[0].Dst) != "10.70.0.0/32" ||
		string(*r[0].Routes[0].Gw) != "10.80.0.2" || *r[0].Routes[0].Dev != "liqo.w1" {
		t.Errorf("route configuration %+v", rc.Spec.Table)
	}
}
