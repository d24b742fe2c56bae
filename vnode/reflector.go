package vnode

import (
	"context"

	"github.com/go-logr/logr"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	corev1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/core/v1beta1"
	offv1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/offloading/v1beta1"
	"github.com/peerkit/terraform-provider-liqo/vnode/namespaces"
)

// Env is what a Reflector gets for one virtual node: both clusters and the namespaces
// offloaded through the node.
type Env struct {
	// NodeName is the virtual node's Node.
	NodeName string
	// ConsumerID and ProviderID are the two clusters' IDs.
	ConsumerID, ProviderID corev1beta1.ClusterID
	// TenantNamespace is the consumer's tenant namespace for the provider (the VirtualNode's).
	TenantNamespace string
	// Local and LocalConfig reach the consumer cluster with the runner's own rights.
	Local       kubernetes.Interface
	LocalConfig *rest.Config
	// Remote and RemoteConfig reach the provider cluster with the consumer's identity there.
	Remote       kubernetes.Interface
	RemoteConfig *rest.Config
	// Namespaces maps offloaded local namespaces to their remote names.
	Namespaces *namespaces.Mapper
	// Kubelet is where the node's kubelet endpoint is served (the Node advertises it); nil when
	// the runner has no KubeletAddress.
	Kubelet *KubeletEndpoint
	// OffloadingPatch is the VirtualNode's spec.offloadingPatch (nil when unset): what the pod
	// reflector changes on the pods it offloads. A changed patch restarts the node's reflectors.
	OffloadingPatch *offv1beta1.OffloadingPatch
	// Log is the virtual node's logger.
	Log logr.Logger
}

// Reflector mirrors one concern (pods, config maps, events, the kubelet endpoint, ...) between
// the consumer and the provider for one virtual node. Run blocks until ctx ends; an error
// before that is logged and Run is started again after a back-off.
type Reflector interface {
	// Name names the reflector in logs.
	Name() string
	// Run reflects until ctx ends.
	Run(ctx context.Context, env *Env) error
}
