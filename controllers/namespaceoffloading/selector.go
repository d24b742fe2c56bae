package namespaceoffloading

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
)

// operators maps a NodeSelectorOperator to its label-selector equivalent.
var operators = map[corev1.NodeSelectorOperator]selection.Operator{
	corev1.NodeSelectorOpIn:           selection.In,
	corev1.NodeSelectorOpNotIn:        selection.NotIn,
	corev1.NodeSelectorOpExists:       selection.Exists,
	corev1.NodeSelectorOpDoesNotExist: selection.DoesNotExist,
	corev1.NodeSelectorOpGt:           selection.GreaterThan,
	corev1.NodeSelectorOpLt:           selection.LessThan,
}

// Matches tells whether a node is selected by a NodeSelector with the scheduler's semantics:
// the terms are ORed, the requirements of a term ANDed, a term with no requirement selects
// nothing, and matchFields knows metadata.name. A nil selector, or one with no terms, selects
// every node. An invalid requirement is an error naming the term.
func Matches(sel *corev1.NodeSelector, node metav1.Object) (bool, error) {
	if sel == nil || len(sel.NodeSelectorTerms) == 0 {
		return true, nil
	}
	var firstErr error
	for i, term := range sel.NodeSelectorTerms {
		ok, err := termMatches(term, node)
		if err != nil {
			if firstErr == nil {
				firstErr = fmt.Errorf("clusterSelector.nodeSelectorTerms[%d]: %w", i, err)
			}
			continue
		}
		if ok {
			return true, nil
		}
	}
	return false, firstErr
}

func termMatches(term corev1.NodeSelectorTerm, node metav1.Object) (bool, error) {
	if len(term.MatchExpressions) == 0 && len(term.MatchFields) == 0 {
		return false, nil
	}
	if len(term.MatchExpressions) > 0 {
		sel, err := requirements(term.MatchExpressions, "matchExpressions")
		if err != nil {
			return false, err
		}
		if !sel.Matches(labels.Set(node.GetLabels())) {
			return false, nil
		}
	}
	if len(term.MatchFields) > 0 {
		for j, f := range term.MatchFields {
			if f.Key != "metadata.name" {
				return false, fmt.Errorf("matchFields[%d]: key %q is not supported (only metadata.name)", j, f.Key)
			}
		}
		sel, err := requirements(term.MatchFields, "matchFields")
		if err != nil {
			return false, err
		}
		if !sel.Matches(labels.Set{"metadata.name": node.GetName()}) {
			return false, nil
		}
	}
	return true, nil
}

func requirements(reqs []corev1.NodeSelectorRequirement, field string) (labels.Selector, error) {
	sel := labels.NewSelector()
	for j, r := range reqs {
		op, ok := operators[r.Operator]
		if !ok {
			return nil, fmt.Errorf("%s[%d]: operator %q is not one of In, NotIn, Exists, DoesNotExist, Gt, Lt", field, j, r.Operator)
		}
		req, err := labels.NewRequirement(r.Key, op, r.Values)
		if err != nil {
			return nil, fmt.Errorf("%s[%d]: %w", field, j, err)
		}
		sel = sel.Add(*req)
	}
	return sel, nil
}
