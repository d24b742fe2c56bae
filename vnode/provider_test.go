package vnode

import (
	"errors"
	"testing"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
)

// TestProbeHysteresis: the node turns NotReady only after unreachableAfter failed probes in a
// row, and Ready again at the first answer.
func TestProbeHysteresis(t *testing.T) {
	var shown []corev1.ConditionStatus
	p := &provider{node: &corev1.Node{}, log: logr.Discard()}
	p.NotifyNodeStatus(t.Context(), func(n *corev1.Node) { shown = append(shown, n.Status.Conditions[0].Status) })
	timeout := errors.New("context deadline exceeded")
	steps := []struct {
		err  error
		want []corev1.ConditionStatus
	}{
		{nil, []corev1.ConditionStatus{corev1.ConditionTrue}},
		{timeout, []corev1.ConditionStatus{corev1.ConditionTrue}},
		{timeout, []corev1.ConditionStatus{corev1.ConditionTrue}},
		{nil, []corev1.ConditionStatus{corev1.ConditionTrue}},
		{timeout, []corev1.ConditionStatus{corev1.ConditionTrue}},
		{timeout, []corev1.ConditionStatus{corev1.ConditionTrue}},
		{timeout, []corev1.ConditionStatus{corev1.ConditionTrue, corev1.ConditionFalse}},
		{timeout, []corev1.ConditionStatus{corev1.ConditionTrue, corev1.ConditionFalse}},
		{nil, []corev1.ConditionStatus{corev1.ConditionTrue, corev1.ConditionFalse, corev1.ConditionTrue}},
	}
	for i, s := range steps {
		p.record(s.err)
		p.push()
		if len(shown) != len(s.want) || shown[len(shown)-1] != s.want[len(s.want)-1] {
			t.Fatalf("after probe %d (error %v): the node showed %v, want %v", i+1, s.err, shown, s.want)
		}
	}
	if p.unreachable != timeout.Error() {
		t.Errorf("the NotReady message's cause is %q, want %q", p.unreachable, timeout.Error())
	}
}
