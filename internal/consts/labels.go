// Package consts holds the names that are part of the interface with Liqo: label and annotation
// keys, well-known namespaces and object names (DESIGN.md section 2).
package consts

import "strings"

const (
	// RemoteClusterIDLabel marks an object (tenant namespace, PublicKey, Configuration, ...) as
	// belonging to the peering with the cluster whose ID is the label's value.
	RemoteClusterIDLabel = "liqo.io/remote-cluster-id"
	// TenantNamespaceLabel ("true") marks a tenant namespace.
	TenantNamespaceLabel = "liqo.io/tenant-namespace"
	// IdentityTypeLabel gives the type of an identity kubeconfig Secret (ControlPlane, ResourceSlice).
	IdentityTypeLabel = "liqo.io/identity-type"
	// RemoteTenantNamespaceAnnotation names, on an identity Secret, the tenant namespace in the
	// remote cluster that the identity works in.
	RemoteTenantNamespaceAnnotation = "liqo.io/remote-tenant-namespace"
	// KubeconfigSecretAnnotation names an identity kubeconfig Secret. On an Identity: the Secret
	// its author wrote with a client key of its own (liqo_identity, from liqo_consumer_identity);
	// the identity controller, whose kubeconfigs use the cluster's signing key, then writes none
	// and only points the Identity's status at it (ours, not upstream Liqo's). On a virtual
	// kubelet's pod template: the Secret it reads, so that another Secret rolls the Deployment.
	KubeconfigSecretAnnotation = "liqo.io/kubeconfig-secret" //nolint:gosec // an annotation key, not a credential
	// LastHandshakeAnnotation is, on a Connection, when its gateway's WireGuard peer last
	// completed a handshake (RFC 3339). Our gateways write it; upstream Liqo's do not.
	LastHandshakeAnnotation = "networking.liqo.io/last-handshake"
	// GatewayResourceLabel ("true") marks the network objects a gateway reads (key Secret, PublicKey).
	GatewayResourceLabel = "networking.liqo.io/gateway-resource"
	// TypeLabel gives the type of a Liqo node; VirtualNodeType is its value on virtual nodes.
	TypeLabel = "liqo.io/type"
	// VirtualNodeType is TypeLabel's value on virtual nodes.
	VirtualNodeType = "virtual-node"
	// ReplicationLabel ("true") asks for an object to be replicated to the remote cluster.
	ReplicationLabel = "liqo.io/replication"
	// CreateVirtualNodeAnnotation ("true"/"false") on a ResourceSlice asks for a VirtualNode.
	CreateVirtualNodeAnnotation = "liqo.io/create-virtual-node"
	// RemoteNamespaceLabel ("true") marks, on the provider, a namespace created for a consumer's
	// offloaded namespace; RemoteClusterIDLabel names the consumer.
	RemoteNamespaceLabel = "offloading.liqo.io/remote-namespace"
	// OriginNamespaceAnnotation names, on a remote namespace or a reflected object, the
	// consumer's namespace it stands for.
	OriginNamespaceAnnotation = "offloading.liqo.io/origin-namespace"
	// SkipReflectionAnnotation ("true") opts an object out of reflection to providers.
	SkipReflectionAnnotation = "liqo.io/skip-reflection"
	// ReflectedLabel ("true") marks, on the provider, an object a virtual node reflected there
	// (ConfigMap, Secret, Service, EndpointSlice) and, on the consumer, an Event mirrored from
	// the provider; OriginClusterIDLabel names the consumer. Reflectors never touch an object
	// without both labels.
	ReflectedLabel = "offloading.liqo.io/reflected"
	// OriginClusterIDLabel names the consumer a reflected object comes from (upstream Liqo's key).
	OriginClusterIDLabel = "liqo.io/origin-cluster-id"
	// OriginNodeLabel names, on a ShadowPod and the pod the provider makes of it, the consumer's
	// virtual node the pod was offloaded through (upstream Liqo's key); with
	// OriginClusterIDLabel and ReflectedLabel it tells which consumer and node the pod belongs to.
	OriginNodeLabel = "offloading.liqo.io/nodename"
	// RootCAConfigMap is the ConfigMap every namespace holds with the cluster's CA.
	RootCAConfigMap = "kube-root-ca.crt"
	// ReflectedRootCAConfigMap is the name the consumer's RootCAConfigMap has on the provider
	// (whose namespaces hold their own RootCAConfigMap); offloaded pods refer to it by this name.
	ReflectedRootCAConfigMap = "liqo-kube-root-ca.crt"
	// PeerGoneAnnotation ("true") on a ForeignCluster says the peer is gone for good: local
	// cleanup finishes without reaching it.
	PeerGoneAnnotation = "liqo.io/peer-gone"
	// PeerGoneUpstreamAnnotation is upstream Liqo's PeerGoneAnnotation; either says it.
	PeerGoneUpstreamAnnotation = "liqo.io/foreign-cluster-permanently-unreachable"
	// SchedulingEnabledLabel ("true") marks, on the consumer, a namespace whose pods the
	// pod-placement admission webhook shapes after the namespace's NamespaceOffloading
	// (tolerations and node affinity). The namespace-offloading controller sets it while a
	// NamespaceOffloading named offloading exists in the namespace and removes it afterwards;
	// the webhook's namespaceSelector matches only such namespaces, so a webhook that is down
	// never blocks pods of other namespaces. Upstream Liqo uses the same label.
	SchedulingEnabledLabel = "liqo.io/scheduling-enabled"
	// ConsumerGroup is the organization of consumers' control-plane certificates, hence a group
	// of the consumer's user on the provider (whose name is the consumer's cluster ID).
	ConsumerGroup = "liqo.io"
	// ReflectedSecretsPolicy names the ValidatingAdmissionPolicy (and its binding) with which a
	// provider lets a consumer create, change and delete only the Secrets it reflected (labelled
	// ReflectedLabel and OriginClusterIDLabel with its cluster ID): the consumer may write
	// Secrets in its remote namespaces but not read them, so it cannot check for itself.
	ReflectedSecretsPolicy = "liqo-reflected-secrets" //nolint:gosec // a policy's name, not a credential
	// SliceCordonPolicy names the ValidatingAdmissionPolicy (and its binding) with which a
	// provider keeps its cordon of a ResourceSlice (CordonAnnotation, CordonTenantAnnotation on
	// its copy) its own: a consumer, which writes the copy, may not set, change or lift them.
	SliceCordonPolicy = "liqo-slice-cordon"
	// ContractProposalPolicy names the ValidatingAdmissionPolicy (and its binding) with which a
	// cluster keeps its own proposals of Contracts (labelled ReplicationLabel "true", which its
	// controller manager signs with its key and sends to a provider) its own: a peered consumer,
	// which writes Contracts in its tenant namespace, may not label one so (in a two-way peering
	// the namespace is also where this cluster's proposals to that peer live).
	ContractProposalPolicy = "liqo-contract-proposals"
)

// Kubernetes' recommended application labels, which upstream Liqo's tools select on: liqoctl
// finds the cluster-ID ConfigMap and the controller manager's Deployment by name and component.
const (
	// AppNameLabel is app.kubernetes.io/name.
	AppNameLabel = "app.kubernetes.io/name"
	// AppComponentLabel is app.kubernetes.io/component.
	AppComponentLabel = "app.kubernetes.io/component"
	// ManagedByLabel is app.kubernetes.io/managed-by; ManagedByControllerManager as its value
	// marks what the controller manager makes for itself, which its uninstall removes.
	ManagedByLabel = "app.kubernetes.io/managed-by"
	// ManagedByControllerManager is ManagedByLabel's value on the controller manager's own objects.
	ManagedByControllerManager = "liqo-controller-manager"
	// ClusterIDConfigMapApp is the name and component of the cluster-ID ConfigMap.
	ClusterIDConfigMapApp = "clusterid-configmap"
	// ControllerManagerApp is the name and component of the controller manager's Deployment, and
	// the name of its container, whose image tag is the installed version.
	ControllerManagerApp = "controller-manager"
	// ControllerManagerDeployment is the controller manager's Deployment in LiqoNamespace.
	ControllerManagerDeployment = "liqo-controller-manager"
)

// Replication of a consumer's objects (ResourceSlices, NamespaceMaps) to a provider, with
// upstream Liqo's labels, which its tools select on (liqoctl tells a provided slice by
// ReplicatedLabel).
const (
	// ReplicationDestinationLabel names, on an original asking for replication, the cluster its
	// copy goes to.
	ReplicationDestinationLabel = "liqo.io/remoteID"
	// ReplicatedLabel ("true") marks a copy replicated from another cluster.
	ReplicatedLabel = "liqo.io/replicated"
	// ReplicationOriginLabel names, on a copy, the cluster it was replicated from.
	ReplicationOriginLabel = "liqo.io/originID"
	// ReplicationOriginNamespaceAnnotation names, on a copy, the namespace of the original on
	// its cluster (ours: upstream finds it from the tenant namespaces).
	ReplicationOriginNamespaceAnnotation = "liqo.io/origin-namespace"
	// ResourceSliceNameLabel names, on a VirtualNode, the ResourceSlice it was made from.
	ResourceSliceNameLabel = "liqo.io/resourceslice-name"
)

const (
	// LiqoNamespace is where each cluster keeps its own identity.
	LiqoNamespace = "liqo"
	// ClusterIDConfigMap is the ConfigMap in LiqoNamespace holding the cluster ID.
	ClusterIDConfigMap = "liqo-clusterid-configmap"
	// ClusterIDKey is the ConfigMap key of the cluster ID.
	ClusterIDKey = "CLUSTER_ID"
	// KubeconfigSecretKey is the data key of the kubeconfig in an identity Secret.
	KubeconfigSecretKey = "kubeconfig"
	// PrivateKeySecretKey and PublicKeySecretKey are the data keys of a WireGuard key Secret.
	PrivateKeySecretKey = "privateKey"
	// PublicKeySecretKey is the data key of the public key in a WireGuard key Secret (raw 32
	// bytes), in the signing-key Secret and in a signed-nonce Secret (PKIX PEM).
	PublicKeySecretKey = "publicKey"
	// DefaultGatewayPort is the UDP port of a gateway server whose GatewayServer names none
	// (upstream liqoctl's default).
	DefaultGatewayPort = 51840
	// NamespaceOffloadingName is the only name a namespace's NamespaceOffloading may have.
	NamespaceOffloadingName = "offloading"
)

// The cluster's own networks: ipam.liqo.io Network objects in LiqoNamespace, with upstream Liqo
// v1.2's names and labels (its chart's liqo-ipam-networks.yaml): the pod CIDR's named
// PodCIDRNetworkName(cidr), the service and external CIDRs' named after their type; each
// labelled NetworkTypeLabel with its type, the CIDR in spec.cidr and, as used, in status.cidr.
// Tools find them by NetworkTypeLabel, never by name (package clusternet builds and reads them).
const (
	// NetworkTypeLabel gives the role of a Network object.
	NetworkTypeLabel = "ipam.liqo.io/network-type"
	// NetworkNotRemappedLabel ("true") says a Network's CIDR is used as it is, never remapped:
	// the pod and service CIDRs always, the external CIDR when the user set it.
	NetworkNotRemappedLabel = "ipam.liqo.io/network-not-remapped"
	// NetworkSharedLabel ("true") says a Network's CIDR may be shared (the pod and service CIDRs).
	NetworkSharedLabel = "ipam.liqo.io/network-shared"
	// PodCIDRNetwork is NetworkTypeLabel's value on the cluster's pod CIDR Networks (named
	// PodCIDRNetworkName(cidr)).
	PodCIDRNetwork = "pod-cidr"
	// ServiceCIDRNetwork is the type (and name) of the cluster's service CIDR Network.
	ServiceCIDRNetwork = "service-cidr"
	// ExternalCIDRNetwork is the type (and name) of the cluster's external CIDR Network.
	ExternalCIDRNetwork = "external-cidr"
)

// PodCIDRNetworkName is the name of the Network of the pod CIDR cidr (e.g. 10.200.0.0/16 gives
// pod-cidr-10-200-0-0-16): PodCIDRNetwork, a dash and the CIDR with its dots and slash made
// dashes, as upstream's chart names it.
func PodCIDRNetworkName(cidr string) string {
	return PodCIDRNetwork + "-" + strings.NewReplacer("/", "-", ".", "-").Replace(cidr)
}

// A peer's networks as the local cluster sees them: one ipam.liqo.io Network per remote CIDR of a
// Configuration, in the Configuration's namespace and owned by it, with the remote CIDR in
// spec.cidr and the local view of it (the remapped CIDR, or the same one) in status.cidr.
const (
	// NetworkCIDRTypeLabel gives which of a Configuration's remote CIDRs a Network stands for.
	NetworkCIDRTypeLabel = "configuration.liqo.io/cidr-type"
	// PodCIDRType is NetworkCIDRTypeLabel's value for a remote pod CIDR.
	PodCIDRType = "pod"
	// ExternalCIDRType is NetworkCIDRTypeLabel's value for a remote external CIDR.
	ExternalCIDRType = "external"
)

// PeerGone tells whether a ForeignCluster's annotations say the peer is gone for good
// (PeerGoneAnnotation or upstream's PeerGoneUpstreamAnnotation set to "true").
func PeerGone(annotations map[string]string) bool {
	return annotations[PeerGoneAnnotation] == "true" || annotations[PeerGoneUpstreamAnnotation] == "true"
}

// LiqoNamespaceOr is ns, the namespace Liqo is installed in when it is not LiqoNamespace (a
// component's --liqo-namespace, a provider's liqo_namespace), or LiqoNamespace when ns is empty.
func LiqoNamespaceOr(ns string) string {
	if ns == "" {
		return LiqoNamespace
	}
	return ns
}
