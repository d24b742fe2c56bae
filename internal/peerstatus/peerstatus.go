// Package peerstatus words the state of a peering's modules as the ForeignCluster does: each
// module's conditions (networking, authentication, offloading), as the foreigncluster
// controller computes them, summed up in one state. liqo_peering reports these states, and the
// controller uses the same order of states to merge the conditions of several objects.
package peerstatus

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
		if Severity(c.Status) > Severity(worst) {
			worst = c.Status
		}
		established = established || c.Status == corev1beta1.ConditionStatusEstablished
	}
	if Severity(worst) > 0 {
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

// Severity orders condition states from good (0: Established, Ready) to bad (Error), to report
// the worst of several.
func Severity(s corev1beta1.ConditionStatusType) int {
	switch s {
	case corev1beta1.ConditionStatusEstablished, corev1beta1.ConditionStatusReady:
		return 0
	case corev1beta1.ConditionStatusNone:
		return 1
	case corev1beta1.ConditionStatusPending:
		return 2
	case corev1beta1.ConditionStatusSomeNotReady:
		return 3
	case corev1beta1.ConditionStatusNotReady:
		return 4
	}
	return 5
}
