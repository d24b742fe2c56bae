// Package vnode runs virtual nodes: for each VirtualNode, a Node in the consumer cluster that
// stands for the resources a provider granted (capacity = the grant, the virtual-node label and
// NoExecute taint), kept alive by virtual-kubelet's node controller (status and Lease
// heartbeats) and reported NotReady while the provider's API server does not answer. The Runner
// hosts them in-process, one set of goroutines per VirtualNode; pod reflection comes on top.
package vnode
