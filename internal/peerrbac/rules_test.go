package peerrbac_test

import (
	"slices"
	"testing"

	"github.com/peerkit/terraform-provider-liqo/internal/peerrbac"
)

// A consumer's virtual kubelet writes Secrets but may never read one back.
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

// A consumer's control plane reads its Tenant but writes none, and touches nothing outside
// Liqo's authentication and offloading groups.
func TestControlPlaneRulesLeastPrivilege(t *testing.T) {
	readsTenants := false
	for _, r := range peerrbac.ControlPlaneRules() {
		for _, g := range r.APIGroups {
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
