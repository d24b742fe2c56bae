package namespaceoffloading_test

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/peerkit/terraform-provider-liqo/controllers/namespaceoffloading"
)

// TestMatches: the scheduler's NodeSelector semantics over a virtual node's labels and name.
func TestMatches(t *testing.T) {
	node := &metav1.ObjectMeta{Name: "liqo-cl-a", Labels: map[string]string{"region": "eu", "tier": "3"}}
	req := func(key string, op corev1.NodeSelectorOperator, values ...string) corev1.NodeSelectorRequirement {
		return corev1.NodeSelectorRequirement{Key: key, Operator: op, Values: values}
	}
	terms := func(ts ...corev1.NodeSelectorTerm) *corev1.NodeSelector {
		return &corev1.NodeSelector{NodeSelectorTerms: ts}
	}
	exprs := func(rs ...corev1.NodeSelectorRequirement) corev1.NodeSelectorTerm {
		return corev1.NodeSelectorTerm{MatchExpressions: rs}
	}
	for _, c := range []struct {
		name    string
		sel     *corev1.NodeSelector
		want    bool
		wantErr bool
	}{
		{"nil selects all", nil, true, false},
		{"no terms selects all", terms(), true, false},
		{"empty term selects nothing", terms(corev1.NodeSelectorTerm{}), false, false},
		{"In", terms(exprs(req("region", corev1.NodeSelectorOpIn, "eu", "us"))), true, false},
		{"In, other value", terms(exprs(req("region", corev1.NodeSelectorOpIn, "us"))), false, false},
		{"NotIn", terms(exprs(req("region", corev1.NodeSelectorOpNotIn, "us"))), true, false},
		{"Exists", terms(exprs(req("tier", corev1.NodeSelectorOpExists))), true, false},
		{"DoesNotExist", terms(exprs(req("tier", corev1.NodeSelectorOpDoesNotExist))), false, false},
		{"Gt", terms(exprs(req("tier", corev1.NodeSelectorOpGt, "2"))), true, false},
		{"Lt", terms(exprs(req("tier", corev1.NodeSelectorOpLt, "2"))), false, false},
		{"requirements ANDed", terms(exprs(req("region", corev1.NodeSelectorOpIn, "eu"), req("tier", corev1.NodeSelectorOpIn, "1"))), false, false},
		{"terms ORed", terms(exprs(req("region", corev1.NodeSelectorOpIn, "us")), exprs(req("tier", corev1.NodeSelectorOpIn, "3"))), true, false},
		{"matchFields name", terms(corev1.NodeSelectorTerm{MatchFields: []corev1.NodeSelectorRequirement{req("metadata.name", corev1.NodeSelectorOpIn, "liqo-cl-a")}}), true, false},
		{"matchFields other name", terms(corev1.NodeSelectorTerm{MatchFields: []corev1.NodeSelectorRequirement{req("metadata.name", corev1.NodeSelectorOpIn, "x")}}), false, false},
		{"matchFields unknown field", terms(corev1.NodeSelectorTerm{MatchFields: []corev1.NodeSelectorRequirement{req("spec.x", corev1.NodeSelectorOpIn, "x")}}), false, true},
		{"unknown operator", terms(exprs(req("region", "Near", "eu"))), false, true},
		{"invalid term does not hide a valid one", terms(exprs(req("region", "Near", "eu")), exprs(req("region", corev1.NodeSelectorOpIn, "eu"))), true, false},
	} {
		got, err := namespaceoffloading.Matches(c.sel, node)
		if got != c.want || (err != nil) != c.wantErr {
			t.Errorf("%s: got %v, %v; want %v, error %v", c.name, got, err, c.want, c.wantErr)
		}
	}
}
