package forge

import (
	corev1 "k8s.io/api/core/v1"

	"github.com/peerkit/terraform-provider-liqo/internal/consts"
)

// MutateTenantNamespace makes ns the tenant namespace of the peering with the cluster remoteID:
// it gives it consts.TenantNamespaceLabels (the remote cluster's ID, the tenant-namespace mark
// and Pod Security's privileged levels), keeping its other labels.
func MutateTenantNamespace(ns *corev1.Namespace, remoteID string) {
	setLabels(ns, consts.TenantNamespaceLabels(remoteID))
}

// IsTenantNamespaceOf tells whether ns carries the labels of the tenant namespace of the
// peering with remoteID (MutateTenantNamespace's identifying ones).
func IsTenantNamespaceOf(ns *corev1.Namespace, remoteID string) bool {
	return ns.Labels[consts.RemoteClusterIDLabel] == remoteID && ns.Labels[consts.TenantNamespaceLabel] == "true"
}
