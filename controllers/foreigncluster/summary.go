package foreigncluster

import (
	corev1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/core/v1beta1"
)

// Summary is the state of a module, or of some of its conditions, in the ForeignCluster's own
// words, which liqo_peering reports too: None when there is no condition; otherwise the worst
// of them (Error, NotReady, SomeNotReady, Pending, None, from worst up), and, when every one is
// up, Established if one of them says so (a tunnel, an identity), else Ready.
func Summary(conds []corev1beta1.Condition) corev1beta1.ConditionStatusType {
	if len(conds) == 0 {
		return corev1beta1.ConditionStatusNone
	}
	worst := conds[0].Status
	established := false
	for _, c := range conds {
		if severity(c.Status) > severity(worst) {
			worst = c.Status
		}
		established = established || c.Status == corev1beta1.ConditionStatusEstablished
	}
	if severity(worst) > 0 {
		return worst
	}
	if established {
		return corev1beta1.ConditionStatusEstablished
	}
	return corev1beta1.ConditionStatusReady
}

// ConditionsOf returns the conditions of module of the given types, in order.
func ConditionsOf(module corev1beta1.Module, types ...corev1beta1.ConditionType) []corev1beta1.Condition {
	var out []corev1beta1.Condition
	for _, c := range module.Conditions {
		for _, t := range types {
			if c.Type == t {
				out = append(out, c)
			}
		}
	}
	return out
}
