package remap

import (
	"fmt"
	"strings"

	netv1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/networking/v1beta1"
	"github.com/peerkit/terraform-provider-liqo/internal/cidr"
)

// Remapped tells whether the status of conf reports how the local cluster sees every remote
// CIDR of its current spec: status.remote lists as many pod and external CIDRs as the spec,
// and no condition that says which generation it observed is older than the object (a status
// written for the spec before an update is stale). This is the rule the Configuration reconciler's status
// follows; upstream Liqo's, which leaves conditions without a generation, passes it too. seen
// describes the status, for a message naming what was last seen.
func Remapped(conf *netv1beta1.Configuration) (done bool, seen string) {
	st := conf.Status.Remote
	if st == nil {
		return false, "no status.remote" + describeConditions(conf)
	}
	want, got := conf.Spec.Remote.CIDR, st.CIDR
	seen = fmt.Sprintf("status.remote.cidr pod [%s] external [%s]%s", strings.Join(cidr.Strings(got.Pod), ", "),
		strings.Join(cidr.Strings(got.External), ", "), describeConditions(conf))
	if len(got.Pod) != len(want.Pod) || len(got.External) != len(want.External) {
		return false, seen
	}
	for _, c := range conf.Status.Conditions {
		if c.ObservedGeneration != 0 && c.ObservedGeneration < conf.Generation {
			return false, seen + fmt.Sprintf(" (condition %s observed generation %d, the object is at %d)",
				c.Type, c.ObservedGeneration, conf.Generation)
		}
	}
	return true, seen
}

// describeConditions shows the status conditions of conf for messages.
func describeConditions(conf *netv1beta1.Configuration) string {
	if len(conf.Status.Conditions) == 0 {
		return ", no conditions"
	}
	parts := make([]string, 0, len(conf.Status.Conditions))
	for _, c := range conf.Status.Conditions {
		parts = append(parts, fmt.Sprintf("%s=%s (%s: %s)", c.Type, c.Status, c.Reason, c.Message))
	}
	return ", conditions " + strings.Join(parts, "; ")
}
