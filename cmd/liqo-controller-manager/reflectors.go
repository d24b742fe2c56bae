package main

import (
	"github.com/peerkit/terraform-provider-liqo/vnode"
	"github.com/peerkit/terraform-provider-liqo/vnode/events"
	"github.com/peerkit/terraform-provider-liqo/vnode/objects"
	"github.com/peerkit/terraform-provider-liqo/vnode/pods"
)

// reflectors are what every in-process virtual node runs next to its node controller: the
// same list as cmd/liqo-virtual-kubelet's.
func reflectors() []vnode.Reflector {
	return []vnode.Reflector{
		&pods.Reflector{},
		objects.New(),
		events.New(),
	}
}
