// Package forge builds the custom resources (and tenant namespaces) a peering is made of, one
// builder per kind, for every writer of that kind: the provider's fine-grained resources,
// liqo_peering (package internal/peering) and the controllers. Each Mutate function brings an
// object, new or read from the cluster, to what its options say, setting the labels and spec
// fields its kind's writers manage and keeping the rest (other labels, status), so that one
// function serves create and update alike (for instance inside controllerutil.CreateOrPatch).
// Labels, annotations and names come from package consts, with upstream Liqo's values.
package forge

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// setLabels adds want to obj's labels, keeping the others.
func setLabels(obj metav1.Object, want map[string]string) {
	labels := obj.GetLabels()
	if labels == nil {
		labels = make(map[string]string, len(want))
	}
	for k, v := range want {
		labels[k] = v
	}
	obj.SetLabels(labels)
}
