package peerrbac_test

import (
	"slices"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"

	"github.com/peerkit/terraform-provider-liqo/internal/peerrbac"
)

// upstreamRemoteRole is upstream Liqo v1.2.0's liqo-virtual-kubelet-remote ClusterRole
// (deployments/liqo/files/liqo-virtual-kubelet-remote-ClusterRole.yaml), which it binds to the
// consumer's group in each remote namespace: what its virtual kubelet needs there.
var upstreamRemoteRole = []rbacv1.PolicyRule{
	{APIGroups: []string{""}, Resources: []string{"configmaps", "events", "persistentvolumeclaims", "secrets", "services"},
		Verbs: []string{"create", "delete", "get", "list", "patch", "update", "watch"}},
	{APIGroups: []string{""}, Resources: []string{"pods/attach", "pods/exec"}, Verbs: []string{"create"}},
	{APIGroups: []string{""}, Resources: []string{"pods/log"}, Verbs: []string{"get", "list"}},
	{APIGroups: []string{""}, Resources: []string{"pods/portforward"}, Verbs: []string{"create", "get"}},
	{APIGroups: []string{"", "metrics.k8s.io"}, Resources: []string{"pods"}, Verbs: []string{"get", "list", "watch"}},
	{APIGroups: []string{"networking.k8s.io"}, Resources: []string{"ingresses"}, Verbs: []string{"create", "delete", "get", "list", "patch", "update", "watch"}},
	{APIGroups: []string{"offloading.liqo.io"}, Resources: []string{"shadowendpointslices", "shadowpods"},
		Verbs: []string{"create", "delete", "get", "list", "patch", "update", "watch"}},
}

// allows says whether rules grant verb on group/resource.
func allows(rules []rbacv1.PolicyRule, group, resource, verb string) bool {
	for _, r := range rules {
		if slices.Contains(r.APIGroups, group) && slices.Contains(r.Resources, resource) && slices.Contains(r.Verbs, verb) {
			return true
		}
	}
	return false
}

// A slice certificate's holder may do in its consumer's remote namespaces all that upstream's
// virtual kubelet may (so that upstream's runs against this provider), and all that ours may;
// never with a wildcard, never deletecollection on Secrets (the reflected-secrets policy sees no
// object in it), never a pod or a service account directly.
func TestSliceWorkloadRulesCoverUpstreamAndNoMore(t *testing.T) {
	ours := peerrbac.SliceWorkloadRules()
	for _, r := range peerrbac.WorkloadRules() {
		for _, res := range r.Resources {
			for _, v := range r.Verbs {
				if !allows(ours, r.APIGroups[0], res, v) {
					t.Errorf("our virtual kubelet may %s %s; a slice certificate may not", v, res)
				}
			}
		}
	}
	for _, r := range upstreamRemoteRole {
		for _, g := range r.APIGroups {
			for _, res := range r.Resources {
				for _, v := range r.Verbs {
					if !allows(ours, g, res, v) {
						t.Errorf("upstream's virtual kubelet may %s %s (group %q); ours may not", v, res, g)
					}
				}
			}
		}
	}
	for _, r := range ours {
		if slices.Contains(r.Verbs, "*") || slices.Contains(r.Resources, "*") || slices.Contains(r.APIGroups, "*") {
			t.Errorf("rule %v uses a wildcard", r)
		}
	}
	for _, forbidden := range [][3]string{{"", "secrets", "deletecollection"}, {"", "pods", "create"}, {"", "pods", "delete"},
		{"", "nodes", "get"}, {"rbac.authorization.k8s.io", "rolebindings", "create"},
		{"", "serviceaccounts", "create"}, {"", "serviceaccounts/token", "create"}} { // as upstream's, our virtual kubelet makes none
		if allows(ours, forbidden[0], forbidden[1], forbidden[2]) {
			t.Errorf("a consumer may %s %s (group %q)", forbidden[2], forbidden[1], forbidden[0])
		}
	}
}

// Our virtual kubelet's user writes Secrets but may never read one back.
func TestWorkloadRulesNeverReadSecrets(t *testing.T) {
	for _, r := range peerrbac.WorkloadRules() {
		if !slices.Contains(r.Resources, "secrets") {
			continue
		}
		for _, v := range []string{"get", "list", "watch", "patch", "deletecollection", "*"} {
			if slices.Contains(r.Verbs, v) {
				t.Errorf("rule %v grants %q on secrets", r, v)
			}
		}
	}
}

// A consumer's control plane reads its Tenant but writes none, reads the Offers published to it
// but writes none, writes its Contracts but not their status (the provider's answer), and
// touches nothing outside Liqo's authentication and offloading groups and our market group's
// offers and contracts.
func TestControlPlaneRulesLeastPrivilege(t *testing.T) {
	readsTenants, readsOffers, writesContracts := false, false, false
	for _, r := range peerrbac.ControlPlaneRules() {
		for _, g := range r.APIGroups {
			if g == "market.peerkit.io" {
				switch {
				case slices.Equal(r.Resources, []string{"offers"}) && slices.Equal(r.Verbs, []string{"get", "list", "watch"}):
					readsOffers = true
				case slices.Equal(r.Resources, []string{"contracts"}) && !slices.Contains(r.Verbs, "deletecollection") && !slices.Contains(r.Verbs, "*"):
					writesContracts = true
				default:
					t.Errorf("market rule %v: want read-only offers and contracts without their status", r)
				}
				continue
			}
			if g != "authentication.liqo.io" && g != "offloading.liqo.io" {
				t.Errorf("rule %v reaches group %q", r, g)
			}
		}
		if slices.Contains(r.Resources, "tenants") {
			readsTenants = true
			if !slices.Equal(r.Verbs, []string{"get", "list", "watch"}) {
				t.Errorf("tenants rule grants %v, want read only", r.Verbs)
			}
		}
	}
	if !readsTenants {
		t.Error("no rule lets the consumer read its Tenant (renewed certificates are read from its status)")
	}
	if !readsOffers {
		t.Error("no rule lets the consumer read the Offers published to it")
	}
	if !writesContracts {
		t.Error("no rule lets the consumer write its Contracts")
	}
}

// A consumer's control plane writes Renews and their status in its tenant namespace: upstream
// Liqo's consumers ask for new certificates through them, and read the answer from the status.
func TestControlPlaneRulesWriteRenews(t *testing.T) {
	for _, res := range []string{"renews", "renews/status"} {
		granted := false
		for _, r := range peerrbac.ControlPlaneRules() {
			if slices.Contains(r.APIGroups, "authentication.liqo.io") && slices.Contains(r.Resources, res) {
				granted = slices.Contains(r.Verbs, "create") && slices.Contains(r.Verbs, "get") && slices.Contains(r.Verbs, "update")
			}
		}
		if !granted {
			t.Errorf("no rule lets the consumer create, read and update %s", res)
		}
	}
}

// Our virtual kubelet writes EndpointSlices only as ShadowEndpointSlices, as upstream's role
// allows it: never EndpointSlices themselves, which the provider makes.
func TestWorkloadRulesEndpointSlicesOnlyAsShadows(t *testing.T) {
	for _, rules := range [][]rbacv1.PolicyRule{peerrbac.WorkloadRules(), peerrbac.SliceWorkloadRules()} {
		for _, v := range []string{"get", "list", "watch", "create", "update", "delete"} {
			if !allows(rules, "offloading.liqo.io", "shadowendpointslices", v) {
				t.Errorf("a consumer may not %s shadowendpointslices", v)
			}
		}
		for _, v := range []string{"get", "list", "watch", "create", "update", "patch", "delete", "deletecollection"} {
			if allows(rules, "discovery.k8s.io", "endpointslices", v) {
				t.Errorf("a consumer may %s endpointslices", v)
			}
		}
	}
}
