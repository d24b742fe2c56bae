// Package clusterid reads a cluster's ID where its controller manager records it (and upstream
// Liqo's does): key CLUSTER_ID of ConfigMap liqo-clusterid-configmap in the Liqo namespace. It
// is the one reader of that ConfigMap; each caller says in its own words what to do when there
// is none (ErrNotRecorded).
package clusterid

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	corev1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/core/v1beta1"
	"github.com/peerkit/terraform-provider-liqo/internal/consts"
)

// ErrNotRecorded is wrapped by Read's error when the cluster has no ID recorded: no ConfigMap,
// or no CLUSTER_ID in it (the controller manager has not run in that namespace).
var ErrNotRecorded = errors.New("no cluster ID recorded")

// Read returns the cluster ID recorded in the Liqo namespace liqoNS. Its error names the
// ConfigMap, and wraps ErrNotRecorded when there is no ID.
func Read(ctx context.Context, c client.Reader, liqoNS string) (corev1beta1.ClusterID, error) {
	cm := &corev1.ConfigMap{}
	err := c.Get(ctx, client.ObjectKey{Namespace: liqoNS, Name: consts.ClusterIDConfigMap}, cm)
	switch {
	case apierrors.IsNotFound(err):
		return "", fmt.Errorf("%w: no ConfigMap %s/%s", ErrNotRecorded, liqoNS, consts.ClusterIDConfigMap)
	case err != nil:
		return "", fmt.Errorf("reading ConfigMap %s/%s: %w", liqoNS, consts.ClusterIDConfigMap, err)
	case cm.Data[consts.ClusterIDKey] == "":
		return "", fmt.Errorf("%w: ConfigMap %s/%s has no %s", ErrNotRecorded, liqoNS, consts.ClusterIDConfigMap, consts.ClusterIDKey)
	}
	return corev1beta1.ClusterID(cm.Data[consts.ClusterIDKey]), nil
}
