package consts

// Upstream Liqo v1.2's reflection labels: its virtual kubelet marks every object it writes on a
// provider with the consumer it comes from and the provider it goes to. Ours writes them too,
// beside ReflectedLabel and OriginClusterIDLabel, so that either side may run either's
// controllers.
const (
	// UpstreamOriginLabel names, on a reflected object (ShadowPod, Secret, ConfigMap, Service,
	// ShadowEndpointSlice, ...), the consumer cluster it comes from.
	UpstreamOriginLabel = "offloading.liqo.io/origin"
	// UpstreamDestinationLabel names, on a reflected object, the provider cluster it is for.
	UpstreamDestinationLabel = "offloading.liqo.io/destination"
)

// ReflectionOrigin is the consumer cluster a reflected object on a provider says it comes from,
// by our labels (ReflectedLabel "true" and OriginClusterIDLabel) or by upstream's
// (UpstreamOriginLabel); "" when it says none, or when the two name different clusters. Who
// may write it is the provider's to check (RBAC, the reflected-secrets policy, the ShadowPod
// webhook): the labels are only the consumer's claim.
func ReflectionOrigin(labels map[string]string) string {
	ours := ""
	if labels[ReflectedLabel] == "true" {
		ours = labels[OriginClusterIDLabel]
	}
	theirs := labels[UpstreamOriginLabel]
	switch {
	case ours == "":
		return theirs
	case theirs == "" || theirs == ours:
		return ours
	default:
		return ""
	}
}

// ReflectionLabels are the labels a virtual kubelet of consumer puts on what it writes on
// provider: ours and upstream's, so that a provider running either's controllers knows the copy.
func ReflectionLabels(consumer, provider string) map[string]string {
	l := map[string]string{ReflectedLabel: "true", OriginClusterIDLabel: consumer, UpstreamOriginLabel: consumer}
	if provider != "" {
		l[UpstreamDestinationLabel] = provider
	}
	return l
}

// EndpointSlices reflected to a provider: the endpointslice.kubernetes.io/managed-by value of
// upstream Liqo v1.2's virtual kubelet on the ShadowEndpointSlices it writes (and so on the
// EndpointSlices made of them), which ours writes too, and the value our virtual kubelet put on
// the EndpointSlices it wrote directly before it wrote ShadowEndpointSlices. Neither is
// Kubernetes' own EndpointSlice controller's, which so leaves those slices alone.
const (
	// UpstreamEndpointSliceManagedBy is upstream's value, on ShadowEndpointSlices and the
	// EndpointSlices made of them.
	UpstreamEndpointSliceManagedBy = "endpointslice.reflection.liqo.io"
	// LegacyEndpointSliceManagedBy is the value of the EndpointSlices our virtual kubelet
	// reflected directly into remote namespaces before; the provider's ShadowEndpointSlice
	// controller takes such a slice over when a ShadowEndpointSlice of its name comes.
	LegacyEndpointSliceManagedBy = "endpointslice-reflection.liqo.io"
)

const (
	// LiqoManagedByLabel is upstream's liqo.io/managed-by: on the EndpointSlices made of
	// ShadowEndpointSlices (value "shadowendpointslice"), and on the RBAC objects and CSRs
	// liqo_consumer_identity manages.
	LiqoManagedByLabel = "liqo.io/managed-by"
	// DirectConnectionsAnnotation is upstream's annotation of a ShadowEndpointSlice for
	// provider-to-provider connections, which is not copied to its EndpointSlice.
	DirectConnectionsAnnotation = "liqo.io/direct-connections-data"
)

// Upstream Liqo v1.2's per-pod API-server support: an annotation of a pod offloaded through a
// virtual node that overrides, for that pod, how its virtual kubelet gives it service-account
// tokens on the provider.
const (
	// APIServerSupportAnnotation, on a pod, overrides its virtual kubelet's API-server support:
	// APIServerSupportRemote or APIServerSupportDisabled (any other value: the default).
	APIServerSupportAnnotation = "liqo.io/api-server-support"
	// APIServerSupportRemote: the remote pod runs as a service account of the provider (the
	// pod's, or the one RemoteServiceAccountNameAnnotation names), which must exist there, with
	// the provider's tokens: it talks to the provider's API server.
	APIServerSupportRemote = "remote"
	// APIServerSupportDisabled: the remote pod runs with no service account token.
	APIServerSupportDisabled = "disabled"
	// RemoteServiceAccountNameAnnotation, on a pod annotated APIServerSupportRemote, names the
	// provider's service account its remote pod runs as (default: the pod's own name).
	RemoteServiceAccountNameAnnotation = "liqo.io/remote-service-account-name"
)
