// Package reflectors is the one list of what every virtual node runs next to its node
// controller, shared by the controller manager's in-process runner and by
// cmd/liqo-virtual-kubelet, so that both run the same code.
package reflectors

import (
	"github.com/peerkit/terraform-provider-liqo/vnode"
	"github.com/peerkit/terraform-provider-liqo/vnode/events"
	"github.com/peerkit/terraform-provider-liqo/vnode/kubeletserver"
	"github.com/peerkit/terraform-provider-liqo/vnode/objects"
	"github.com/peerkit/terraform-provider-liqo/vnode/pods"
)

// All returns new instances of every reflector: pods, the objects they need, events, and the
// kubelet endpoint (logs, exec; served when the runner has a KubeletAddress).
func All() []vnode.Reflector {
	return []vnode.Reflector{
		&pods.Reflector{},
		objects.New(),
		events.New(),
		kubeletserver.New(kubeletserver.Options{}),
	}
}
