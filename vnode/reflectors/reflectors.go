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
	"github.com/peerkit/terraform-provider-liqo/vnode/storage"
)

// All returns new instances of every reflector with the default options.
func All() []vnode.Reflector { return New(Options{}) }

// New returns new instances of every reflector, tuned by o: pods, the objects they need
// (ConfigMaps, Secrets, Services, EndpointSlices; Ingresses apart), the volumes of the virtual
// storage class (unless disabled), events, and the kubelet endpoint (logs, exec; served when
// the runner has a KubeletAddress).
func New(o Options) []vnode.Reflector {
	podsReflector := &pods.Reflector{}
	if o.APIServerSupport {
		podsReflector.APIServer = &pods.APIServerSupport{Host: o.HomeAPIServerHost, Port: o.HomeAPIServerPort}
	}
	out := []vnode.Reflector{
		podsReflector,
		&objects.Reflector{Policies: o.Policies},
		&objects.IngressReflector{Policy: o.Policies.Of(objects.ResourceIngress), RemoteClass: o.RemoteIngressClass},
	}
	if !o.DisableStorage {
		out = append(out, &storage.Reflector{VirtualClass: o.VirtualStorageClass, RemoteClass: o.RemoteStorageClass})
	}
	return append(out, events.New(), kubeletserver.New(kubeletserver.Options{}))
}
