package main

import (
	"github.com/peerkit/terraform-provider-liqo/vnode"
	vreflectors "github.com/peerkit/terraform-provider-liqo/vnode/reflectors"
)

// reflectors are what every in-process virtual node runs next to its node controller, tuned by
// o: the same list as cmd/liqo-virtual-kubelet's. Add new reflectors to vnode/reflectors.New.
func reflectors(o vreflectors.Options) []vnode.Reflector {
	return vreflectors.New(o)
}
