// Package podplacement is the consumer's mutating admission webhook that makes the pods of an
// offloaded namespace land where its NamespaceOffloading's podOffloadingStrategy says:
//
//   - Local: the pod gets a required node affinity that excludes virtual nodes
//     (liqo.io/type NotIn [virtual-node]), so that even a pod tolerating every taint stays local.
//   - Remote: the pod tolerates the virtual nodes' NoExecute taint and requires a virtual node
//     matching the NamespaceOffloading's clusterSelector.
//   - LocalAndRemote (the default): the pod tolerates the taint and requires either a node that
//     is not virtual or a virtual node matching the clusterSelector.
//
// Why a webhook: where a pod may run is decided by its tolerations and node affinity, which
// must be in the pod when the scheduler first sees it, and a pod's node affinity cannot be
// changed after creation (the API server refuses updates of spec.affinity; tolerations can
// only be added). A controller that patched pods after creation would race the scheduler and
// could not fix affinity at all; setting a default on the workload objects (Deployments,
// Jobs, ...) would miss bare pods and every other kind of owner. A mutating webhook on pod
// creation sees every pod of the namespace before it is stored.
//
// The user's own constraints are kept: each of the pod's required node-selector terms is
// ANDed with each of the strategy's terms (the terms of a NodeSelector are ORed, the
// expressions of a term ANDed, so the product keeps both meanings), preferred terms,
// nodeSelector and the other tolerations are untouched.
//
// The webhook is registered (Webhook) for pod creation in namespaces labelled
// liqo.io/scheduling-enabled=true (consts.SchedulingEnabledLabel, set by the
// namespace-offloading controller) and never in system namespaces; with failurePolicy Fail, a
// webhook that is down blocks pod creation only in offloaded namespaces, where letting pods
// through unshaped would run them in the wrong place.
package podplacement

import (
	"slices"

	corev1 "k8s.io/api/core/v1"

	offv1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/offloading/v1beta1"
	"github.com/peerkit/terraform-provider-liqo/internal/consts"
	"github.com/peerkit/terraform-provider-liqo/vnode"
)

// Toleration tolerates the virtual nodes' taint (vnode.Taint).
var Toleration = corev1.Toleration{Key: vnode.Taint.Key, Operator: corev1.TolerationOpEqual, Value: vnode.Taint.Value, Effect: vnode.Taint.Effect}

var (
	notVirtual = corev1.NodeSelectorRequirement{Key: consts.TypeLabel, Operator: corev1.NodeSelectorOpNotIn, Values: []string{consts.VirtualNodeType}}
	virtual    = corev1.NodeSelectorRequirement{Key: consts.TypeLabel, Operator: corev1.NodeSelectorOpIn, Values: []string{consts.VirtualNodeType}}
)

// Terms returns the required node-selector terms (ORed) for a strategy and a cluster
// selector, and whether the pod must tolerate the virtual nodes' taint. An empty strategy is
// the API's default, LocalAndRemote. A nil selector, or one without terms, selects every
// virtual node.
func Terms(strategy offv1beta1.PodOffloadingStrategyType, clusterSelector *corev1.NodeSelector) ([]corev1.NodeSelectorTerm, bool) {
	remote := []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{virtual}}}
	if clusterSelector != nil && len(clusterSelector.NodeSelectorTerms) > 0 {
		remote = remote[:0]
		for _, t := range clusterSelector.NodeSelectorTerms {
			remote = append(remote, and(corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{virtual}}, t))
		}
	}
	local := corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{notVirtual}}
	switch strategy {
	case offv1beta1.LocalPodOffloadingStrategyType:
		return []corev1.NodeSelectorTerm{local}, false
	case offv1beta1.RemotePodOffloadingStrategyType:
		return remote, true
	default: // LocalAndRemote
		return append([]corev1.NodeSelectorTerm{local}, remote...), true
	}
}

// Apply shapes spec for a strategy and cluster selector: it adds the toleration when needed
// and requires the strategy's terms on top of the pod's own required node affinity.
func Apply(spec *corev1.PodSpec, strategy offv1beta1.PodOffloadingStrategyType, clusterSelector *corev1.NodeSelector) {
	terms, tolerate := Terms(strategy, clusterSelector)
	if tolerate && !slices.ContainsFunc(spec.Tolerations, func(t corev1.Toleration) bool { return t.MatchToleration(&Toleration) }) {
		spec.Tolerations = append(spec.Tolerations, Toleration)
	}
	if spec.Affinity == nil {
		spec.Affinity = &corev1.Affinity{}
	}
	if spec.Affinity.NodeAffinity == nil {
		spec.Affinity.NodeAffinity = &corev1.NodeAffinity{}
	}
	na := spec.Affinity.NodeAffinity
	na.RequiredDuringSchedulingIgnoredDuringExecution = Merge(na.RequiredDuringSchedulingIgnoredDuringExecution, terms)
}

// Merge returns the node selector that requires both user and ours: the terms of each are
// ORed, so the result has a term for every pair (u AND o). A nil or empty user selector
// requires nothing: the result is ours. A user term that is empty matches no node (the API's
// rule); it is kept as is, so that it still matches nothing. A user term that already has
// every requirement of one of ours is kept as is too (it implies our terms), so that merging
// twice changes nothing more.
func Merge(user *corev1.NodeSelector, ours []corev1.NodeSelectorTerm) *corev1.NodeSelector {
	if user == nil || len(user.NodeSelectorTerms) == 0 {
		out := &corev1.NodeSelector{}
		for _, o := range ours {
			out.NodeSelectorTerms = append(out.NodeSelectorTerms, *o.DeepCopy())
		}
		return out
	}
	out := &corev1.NodeSelector{}
	for _, u := range user.NodeSelectorTerms {
		if len(u.MatchExpressions) == 0 && len(u.MatchFields) == 0 {
			out.NodeSelectorTerms = append(out.NodeSelectorTerms, *u.DeepCopy())
			continue
		}
		if slices.ContainsFunc(ours, func(o corev1.NodeSelectorTerm) bool { return implies(u, o) }) {
			// u already requires one of our terms (a pod shaped before): u AND (o1 OR o2 ...)
			// is u itself.
			out.NodeSelectorTerms = append(out.NodeSelectorTerms, *u.DeepCopy())
			continue
		}
		for _, o := range ours {
			out.NodeSelectorTerms = append(out.NodeSelectorTerms, and(u, o))
		}
	}
	return out
}

// implies says whether term a has every requirement of term b (so a node matching a
// matches b).
func implies(a, b corev1.NodeSelectorTerm) bool {
	has := func(list []corev1.NodeSelectorRequirement) func(corev1.NodeSelectorRequirement) bool {
		return func(r corev1.NodeSelectorRequirement) bool {
			return slices.ContainsFunc(list, func(x corev1.NodeSelectorRequirement) bool { return sameRequirement(x, r) })
		}
	}
	for _, r := range b.MatchExpressions {
		if !has(a.MatchExpressions)(r) {
			return false
		}
	}
	for _, r := range b.MatchFields {
		if !has(a.MatchFields)(r) {
			return false
		}
	}
	return true
}

// and is the term that requires both a and b, without repeating a requirement.
func and(a, b corev1.NodeSelectorTerm) corev1.NodeSelectorTerm {
	out := *a.DeepCopy()
	for _, r := range b.MatchExpressions {
		if !slices.ContainsFunc(out.MatchExpressions, func(x corev1.NodeSelectorRequirement) bool { return sameRequirement(x, r) }) {
			out.MatchExpressions = append(out.MatchExpressions, *r.DeepCopy())
		}
	}
	for _, r := range b.MatchFields {
		if !slices.ContainsFunc(out.MatchFields, func(x corev1.NodeSelectorRequirement) bool { return sameRequirement(x, r) }) {
			out.MatchFields = append(out.MatchFields, *r.DeepCopy())
		}
	}
	return out
}

func sameRequirement(a, b corev1.NodeSelectorRequirement) bool {
	return a.Key == b.Key && a.Operator == b.Operator && slices.Equal(a.Values, b.Values)
}
