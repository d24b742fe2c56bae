package vnode

import (
	"context"
	"encoding/json"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"

	offv1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/offloading/v1beta1"
)

// relabelNode brings the labels of an existing Node in line with a VirtualNode's new spec:
// the node controller adopts a Node that exists as it is, so labels added to spec.labels since
// the Node was made would never reach it, nor removed ones leave it. Labels that neither spec
// names (the Node's own, or set by others) are kept. A Node that does not exist is left to the
// node controller, which creates it with the new labels.
func relabelNode(ctx context.Context, nodes corev1client.NodeInterface, name string, old, cur *offv1beta1.VirtualNodeSpec) error {
	labels := map[string]any{}
	for k := range old.Labels {
		if _, kept := cur.Labels[k]; !kept {
			labels[k] = nil // a merge patch removes it
		}
	}
	for k, v := range cur.Labels {
		if old.Labels[k] != v {
			labels[k] = v
		}
	}
	if len(labels) == 0 {
		return nil
	}
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"labels": labels}})
	if err != nil {
		return fmt.Errorf("relabelling node %s: %w", name, err)
	}
	_, err = nodes.Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("relabelling node %s: %w", name, err)
	}
	return nil
}
