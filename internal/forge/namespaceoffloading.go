package forge

import (
	corev1 "k8s.io/api/core/v1"

	offv1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/offloading/v1beta1"
	"github.com/peerkit/terraform-provider-liqo/internal/consts"
)

// MutateTetheredOffloading makes nsoff the NamespaceOffloading of a tethered cluster's namespace: every
// pod goes to the virtual nodes of the foreign cluster foreignID (strategy Remote, cluster
// selector on consts.RemoteClusterIDLabel), in a remote namespace of the default name, labelled
// as the tethering controller's.
func MutateTetheredOffloading(nsoff *offv1beta1.NamespaceOffloading, foreignID string) {
	if nsoff.Labels == nil {
		nsoff.Labels = map[string]string{}
	}
	nsoff.Labels[consts.LiqoManagedByLabel] = consts.TetheringManagedBy
	nsoff.Spec.PodOffloadingStrategy = offv1beta1.RemotePodOffloadingStrategyType
	nsoff.Spec.NamespaceMappingStrategy = offv1beta1.DefaultNameMappingStrategyType
	nsoff.Spec.RemoteNamespaceName = ""
	nsoff.Spec.ClusterSelector = &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
		MatchExpressions: []corev1.NodeSelectorRequirement{{
			Key: consts.RemoteClusterIDLabel, Operator: corev1.NodeSelectorOpIn, Values: []string{foreignID},
		}},
	}}}
}
