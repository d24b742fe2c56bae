package main

import "github.com/peerkit/terraform-provider-liqo/vnode"

// reflectors are what every in-process virtual node runs next to its node controller: the
// same list as cmd/liqo-virtual-kubelet's.
func reflectors() []vnode.Reflector {
	return nil
}
