package grantenforcement

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/types"

	authv1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/authentication/v1beta1"
	offv1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/offloading/v1beta1"
	"github.com/peerkit/terraform-provider-liqo/internal/consts"
)

// cordonRefusal explains why a new ShadowPod of consumer is refused because of a cordoned
// slice, or returns "". slices are the consumer's slices that make up its grant.
//
// A ShadowPod belongs to the slice whose virtual node its offloading.liqo.io/nodename label
// names (our consumers name it consts.VirtualNodeName of the provider and the slice; upstream
// Liqo's after the slice alone). It is refused when that slice is cordoned (any annotation of
// consts.SliceCordonAnnotations). One that names no such node (not offloaded by a virtual
// kubelet, or through a node this cluster does not know) is refused only when every slice of
// the consumer is cordoned: there is then nowhere left for a new pod.
func cordonRefusal(slices []authv1beta1.ResourceSlice, consumer string, key types.NamespacedName, sp *offv1beta1.ShadowPod) string {
	node := sp.Labels[consts.OriginNodeLabel]
	for i := range slices {
		s := &slices[i]
		if node == "" || !virtualNodeOf(s, node) {
			continue
		}
		by := consts.SliceCordonedBy(s.Annotations)
		if len(by) == 0 {
			return ""
		}
		return fmt.Sprintf("ShadowPod %s of cluster %s is refused: ResourceSlice %s/%s, whose virtual node %s it comes from, is cordoned (%s), so it takes no new pods (those already running keep running). %s.",
			key, consumer, s.Namespace, s.Name, node, annotationsOf(s, by), capitalized(uncordonHint(s, consumer, by)))
	}
	if len(slices) == 0 {
		return ""
	}
	var all []string
	for i := range slices {
		s := &slices[i]
		by := consts.SliceCordonedBy(s.Annotations)
		if len(by) == 0 {
			return ""
		}
		all = append(all, fmt.Sprintf("%s/%s (%s; %s)", s.Namespace, s.Name, annotationsOf(s, by), uncordonHint(s, consumer, by)))
	}
	return fmt.Sprintf("ShadowPod %s of cluster %s is refused: every ResourceSlice granting it resources on this cluster is cordoned, so no new pod is admitted (those already running keep running): %s",
		key, consumer, strings.Join(all, "; "))
}

// virtualNodeOf tells whether node is the virtual node a consumer made of slice.
func virtualNodeOf(s *authv1beta1.ResourceSlice, node string) bool {
	if s.Spec.ProviderClusterID != nil && consts.VirtualNodeName(string(*s.Spec.ProviderClusterID), s.Name) == node {
		return true
	}
	return s.Name == node
}

// annotationsOf lists the cordoning annotations of s, with their values.
func annotationsOf(s *authv1beta1.ResourceSlice, by []string) string {
	out := make([]string, 0, len(by))
	for _, k := range by {
		out = append(out, fmt.Sprintf("annotation %s=%q", k, s.Annotations[k]))
	}
	return strings.Join(out, ", ")
}

// uncordonHint says how to lift each cordon of s.
func uncordonHint(s *authv1beta1.ResourceSlice, consumer string, by []string) string {
	out := make([]string, 0, len(by))
	for _, k := range by {
		switch k {
		case consts.CordonAnnotation:
			out = append(out, fmt.Sprintf("lift it with `liqoctl uncordon resourceslice %s --remote-cluster-id %s` on this cluster (or remove the annotation %s)",
				s.Name, consumer, k))
		case consts.ConsumerCordonAnnotation:
			out = append(out, fmt.Sprintf("cluster %s cordoned it on its side: that cluster lifts it by removing the annotation %s from its own ResourceSlice %s",
				consumer, consts.CordonAnnotation, s.Name))
		case consts.ContractExpiredAnnotation:
			out = append(out, fmt.Sprintf("its contract %s ended: cluster %s renews it (a later end, which this cluster countersigns) to lift it",
				s.Annotations[consts.ContractAnnotation], consumer))
		default:
			out = append(out, fmt.Sprintf("remove the annotation %s from the slice", k))
		}
	}
	return strings.Join(out, "; ")
}

// capitalized returns s with its first letter upper case (s is ASCII).
func capitalized(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}
