// Package reflectors is the one list of what every virtual node runs next to its node
// controller, shared by the controller manager's in-process runner and by
// cmd/liqo-virtual-kubelet, so that both run the same code, and the options both take as
// flags (upstream Liqo's virtual-kubelet flag names).
package reflectors

import (
	"github.com/peerkit/terraform-provider-liqo/vnode"
	"github.com/peerkit/terraform-provider-liqo/vnode/events"
	"github.com/peerkit/terraform-provider-liqo/vnode/kubeletserver"
	"github.com/peerkit/terraform-provider-liqo/vnode/objects"
	"github.com/peerkit/terraform-provider-liqo/vnode/pods"
)

// All returns new instances of every reflector with the default options.
func All() []vnode.Reflector { return New(Options{}) }

// New returns new instances of every reflector, tuned by o: pods, the objects they need
// (ConfigMaps, Secrets, Services, EndpointSlices; Ingresses apart), events, and the kubelet
// endpoint (logs, exec; served when the runner has a KubeletAddress).
func New(o Options) []vnode.Reflector {
	return []vnode.Reflector{
		&pods.Reflector{},
		&objects.Reflector{Policies: o.Policies},
		&objects.IngressReflector{Policy: o.Policies.Of(objects.ResourceIngress), RemoteClass: o.RemoteIngressClass},
		events.New(),
		kubeletserver.New(kubeletserver.Options{}),
	}
}
