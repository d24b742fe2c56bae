package podplacement_test

import (
	"reflect"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	schedulingcorev1 "k8s.io/component-helpers/scheduling/corev1"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"
	"k8s.io/klog/v2"

	"github.com/peerkit/terraform-provider-liqo/controllers/podplacement"
	offv1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/offloading/v1beta1"
	"github.com/peerkit/terraform-provider-liqo/internal/consts"
	"github.com/peerkit/terraform-provider-liqo/vnode"
)

// Nodes of a cluster: two real ones (one with SSDs) and virtual nodes of two providers in two
// regions.
var nodes = []*corev1.Node{
	node("local-a", map[string]string{"disk": "hdd"}, false),
	node("local-b", map[string]string{"disk": "ssd"}, false),
	node("vk-eu", map[string]string{"region": "eu", "disk": "ssd"}, true),
	node("vk-us", map[string]string{"region": "us", "disk": "hdd"}, true),
}

func node(name string, labels map[string]string, virtual bool) *corev1.Node {
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{corev1.LabelHostname: name}}}
	for k, v := range labels {
		n.Labels[k] = v
	}
	if virtual {
		n.Labels[consts.TypeLabel] = consts.VirtualNodeType
		n.Spec.Taints = []corev1.Taint{vnode.Taint}
	}
	return n
}

// feasible returns the nodes the scheduler's own rules (required node affinity, nodeSelector,
// NoSchedule/NoExecute taints) allow the pod on.
func feasible(t *testing.T, spec corev1.PodSpec) []string {
	t.Helper()
	pod := &corev1.Pod{Spec: spec}
	var out []string
	for _, n := range nodes {
		ok, err := nodeaffinity.GetRequiredNodeAffinity(pod).Match(n)
		if err != nil {
			t.Fatalf("matching node %s: %v", n.Name, err)
		}
		if _, untolerated := schedulingcorev1.FindMatchingUntoleratedTaint(klog.Background(), n.Spec.Taints, pod.Spec.Tolerations, func(t *corev1.Taint) bool {
			return t.Effect == corev1.TaintEffectNoSchedule || t.Effect == corev1.TaintEffectNoExecute
		}, false); ok && !untolerated {
			out = append(out, n.Name)
		}
	}
	return out
}

func selector(terms ...corev1.NodeSelectorTerm) *corev1.NodeSelector {
	return &corev1.NodeSelector{NodeSelectorTerms: terms}
}

func term(key string, op corev1.NodeSelectorOperator, values ...string) corev1.NodeSelectorTerm {
	return corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: key, Operator: op, Values: values}}}
}

// TestStrategies: each strategy, with and without a cluster selector, allows exactly the
// nodes it should, judged by the scheduler's own matching.
func TestStrategies(t *testing.T) {
	eu := selector(term("region", corev1.NodeSelectorOpIn, "eu"))
	for _, tc := range []struct {
		strategy offv1beta1.PodOffloadingStrategyType
		selector *corev1.NodeSelector
		want     []string
	}{
		{offv1beta1.LocalPodOffloadingStrategyType, nil, []string{"local-a", "local-b"}},
		{offv1beta1.LocalPodOffloadingStrategyType, eu, []string{"local-a", "local-b"}},
		{offv1beta1.RemotePodOffloadingStrategyType, nil, []string{"vk-eu", "vk-us"}},
		{offv1beta1.RemotePodOffloadingStrategyType, &corev1.NodeSelector{}, []string{"vk-eu", "vk-us"}},
		{offv1beta1.RemotePodOffloadingStrategyType, eu, []string{"vk-eu"}},
		{offv1beta1.LocalAndRemotePodOffloadingStrategyType, nil, []string{"local-a", "local-b", "vk-eu", "vk-us"}},
		{offv1beta1.LocalAndRemotePodOffloadingStrategyType, eu, []string{"local-a", "local-b", "vk-eu"}},
		{"", eu, []string{"local-a", "local-b", "vk-eu"}}, // the API's default is LocalAndRemote
		// Two selector terms are ORed.
		{offv1beta1.RemotePodOffloadingStrategyType, selector(term("region", corev1.NodeSelectorOpIn, "eu"), term("region", corev1.NodeSelectorOpIn, "us")),
			[]string{"vk-eu", "vk-us"}},
	} {
		spec := corev1.PodSpec{}
		if got := feasible(t, spec); len(got) != 2 {
			t.Fatalf("a plain pod fits %v, want the two local nodes (the test's taint matching is off)", got)
		}
		podplacement.Apply(&spec, tc.strategy, tc.selector)
		if got := feasible(t, spec); !slices.Equal(got, tc.want) {
			t.Errorf("%q with selector %v: pod fits %v, want %v", tc.strategy, tc.selector, got, tc.want)
		}
	}
}

// TestUserConstraintsKept: the pod's own required terms (ORed), matchFields, nodeSelector,
// preferred terms, pod affinity and tolerations survive, each ANDed with the strategy.
func TestUserConstraintsKept(t *testing.T) {
	userTerms := selector(term("disk", corev1.NodeSelectorOpIn, "ssd"),
		corev1.NodeSelectorTerm{MatchFields: []corev1.NodeSelectorRequirement{{Key: "metadata.name", Operator: corev1.NodeSelectorOpIn, Values: []string{"vk-us"}}}})
	preferred := []corev1.PreferredSchedulingTerm{{Weight: 3, Preference: term("disk", corev1.NodeSelectorOpIn, "hdd")}}
	podAffinity := &corev1.PodAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{TopologyKey: "zone",
		LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "db"}}}}}
	userToleration := corev1.Toleration{Key: "gpu", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}
	newSpec := func() corev1.PodSpec {
		return corev1.PodSpec{
			Tolerations: []corev1.Toleration{userToleration},
			Affinity: &corev1.Affinity{
				NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: userTerms.DeepCopy(),
					PreferredDuringSchedulingIgnoredDuringExecution: preferred},
				PodAffinity: podAffinity.DeepCopy(),
			},
		}
	}
	for _, tc := range []struct {
		strategy offv1beta1.PodOffloadingStrategyType
		selector *corev1.NodeSelector
		want     []string
	}{
		// user: ssd nodes OR node vk-us.
		{offv1beta1.LocalPodOffloadingStrategyType, nil, []string{"local-b"}},
		{offv1beta1.RemotePodOffloadingStrategyType, nil, []string{"vk-eu", "vk-us"}},
		{offv1beta1.RemotePodOffloadingStrategyType, selector(term("region", corev1.NodeSelectorOpIn, "eu")), []string{"vk-eu"}},
		{offv1beta1.LocalAndRemotePodOffloadingStrategyType, selector(term("region", corev1.NodeSelectorOpIn, "us")), []string{"local-b", "vk-us"}},
	} {
		spec := newSpec()
		podplacement.Apply(&spec, tc.strategy, tc.selector)
		if got := feasible(t, spec); !slices.Equal(got, tc.want) {
			t.Errorf("%s: pod fits %v, want %v", tc.strategy, got, tc.want)
		}
		if !reflect.DeepEqual(spec.Affinity.NodeAffinity.PreferredDuringSchedulingIgnoredDuringExecution, preferred) ||
			!reflect.DeepEqual(spec.Affinity.PodAffinity, podAffinity) || spec.Tolerations[0] != userToleration {
			t.Errorf("%s: user's preferred terms, pod affinity or tolerations changed: %+v", tc.strategy, spec)
		}
		// Applying again (a retried admission) changes nothing more.
		again := *spec.DeepCopy()
		podplacement.Apply(&again, tc.strategy, tc.selector)
		if !reflect.DeepEqual(again.Tolerations, spec.Tolerations) || len(again.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms) !=
			len(spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms) {
			t.Errorf("%s: a second Apply changed the pod:\n%+v\n%+v", tc.strategy, spec, again)
		}
	}

	// nodeSelector is ANDed by the scheduler itself; it must still apply after Apply.
	spec := corev1.PodSpec{NodeSelector: map[string]string{"disk": "hdd"}}
	podplacement.Apply(&spec, offv1beta1.LocalAndRemotePodOffloadingStrategyType, nil)
	if got := feasible(t, spec); !slices.Equal(got, []string{"local-a", "vk-us"}) {
		t.Errorf("nodeSelector disk=hdd with LocalAndRemote: pod fits %v", got)
	}
}

// TestMerge: the product of terms; an empty user term (matches no node) and a user term that
// already implies one of ours are kept as they are.
func TestMerge(t *testing.T) {
	ours := []corev1.NodeSelectorTerm{term("a", corev1.NodeSelectorOpIn, "1"), term("b", corev1.NodeSelectorOpIn, "2")}
	if got := podplacement.Merge(nil, ours); !reflect.DeepEqual(got.NodeSelectorTerms, ours) {
		t.Errorf("nil user: %v", got)
	}
	user := selector(term("x", corev1.NodeSelectorOpExists), corev1.NodeSelectorTerm{}, term("a", corev1.NodeSelectorOpIn, "1"))
	got := podplacement.Merge(user, ours)
	want := []corev1.NodeSelectorTerm{
		{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "x", Operator: corev1.NodeSelectorOpExists}, {Key: "a", Operator: corev1.NodeSelectorOpIn, Values: []string{"1"}}}},
		{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "x", Operator: corev1.NodeSelectorOpExists}, {Key: "b", Operator: corev1.NodeSelectorOpIn, Values: []string{"2"}}}},
		{},
		// a=1 implies our first term: a=1 AND (a=1 OR b=2) is a=1, kept once.
		{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "a", Operator: corev1.NodeSelectorOpIn, Values: []string{"1"}}}},
	}
	if !reflect.DeepEqual(got.NodeSelectorTerms, want) {
		t.Errorf("Merge:\n got %+v\nwant %+v", got.NodeSelectorTerms, want)
	}
	if len(user.NodeSelectorTerms[0].MatchExpressions) != 1 {
		t.Errorf("Merge changed its input: %+v", user)
	}
	// A pod whose only term is empty can run nowhere, before and after.
	spec := corev1.PodSpec{Affinity: &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
		RequiredDuringSchedulingIgnoredDuringExecution: selector(corev1.NodeSelectorTerm{})}}}
	podplacement.Apply(&spec, offv1beta1.LocalAndRemotePodOffloadingStrategyType, nil)
	if got := feasible(t, spec); len(got) != 0 {
		t.Errorf("a pod that matched no node now fits %v", got)
	}
}
