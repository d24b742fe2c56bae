package realnode

import (
	"context"
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/peerkit/terraform-provider-liqo/internal/test/testenv"
)

// metaItems returns the objects of a list.
func metaItems(list client.ObjectList) ([]metav1.Object, error) {
	objs, err := meta.ExtractList(list)
	if err != nil {
		return nil, fmt.Errorf("reading list: %w", err)
	}
	out := make([]metav1.Object, 0, len(objs))
	for _, o := range objs {
		m, err := meta.Accessor(o)
		if err != nil {
			return nil, fmt.Errorf("reading list item: %w", err)
		}
		out = append(out, m)
	}
	return out, nil
}

// listKinds are the cluster-scoped kinds whose liqo-* objects are ours.
var listKinds = map[string]schema.GroupVersionKind{
	"ClusterRoleList":                    {Group: "rbac.authorization.k8s.io", Version: "v1", Kind: "ClusterRoleList"},
	"ClusterRoleBindingList":             {Group: "rbac.authorization.k8s.io", Version: "v1", Kind: "ClusterRoleBindingList"},
	"ValidatingWebhookConfigurationList": {Group: "admissionregistration.k8s.io", Version: "v1", Kind: "ValidatingWebhookConfigurationList"},
	"MutatingWebhookConfigurationList":   {Group: "admissionregistration.k8s.io", Version: "v1", Kind: "MutatingWebhookConfigurationList"},
}

// namedLiqo lists the objects of a cluster-scoped kind whose name starts with liqo-.
func namedLiqo(ctx context.Context, t testing.TB, c *testenv.Cluster, kind string) []string {
	t.Helper()
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(listKinds[kind])
	if err := c.Client.List(ctx, list); err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, o := range list.Items {
		if strings.HasPrefix(o.GetName(), "liqo-") {
			out = append(out, strings.TrimSuffix(kind, "List")+" "+o.GetName())
		}
	}
	return out
}

// describePods summarizes a namespace's pods and their containers' states, for failures.
func describePods(ctx context.Context, c *testenv.Cluster, ns string) string {
	pods := &corev1.PodList{}
	if err := c.Client.List(ctx, pods, client.InNamespace(ns)); err != nil {
		return "listing pods: " + err.Error()
	}
	var b strings.Builder
	for _, p := range pods.Items {
		fmt.Fprintf(&b, "pod %s/%s on %q: %s", p.Namespace, p.Name, p.Spec.NodeName, p.Status.Phase)
		for _, cs := range p.Status.ContainerStatuses {
			fmt.Fprintf(&b, " [%s ready=%v restarts=%d", cs.Name, cs.Ready, cs.RestartCount)
			if cs.State.Waiting != nil {
				fmt.Fprintf(&b, " waiting %s: %s", cs.State.Waiting.Reason, cs.State.Waiting.Message)
			}
			if t := cs.LastTerminationState.Terminated; t != nil {
				fmt.Fprintf(&b, " last exit %d %s: %s", t.ExitCode, t.Reason, t.Message)
			}
			b.WriteString("]")
		}
		for _, cond := range p.Status.Conditions {
			if cond.Status != corev1.ConditionTrue && cond.Message != "" {
				fmt.Fprintf(&b, " %s: %s", cond.Type, cond.Message)
			}
		}
		b.WriteString("\n")
	}
	return b.String()
}
