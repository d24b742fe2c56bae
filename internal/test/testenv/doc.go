// Package testenv starts real Kubernetes control planes for tests, the sandbox and benchmarks:
// N named clusters, each with etcd and kube-apiserver, and optionally kube-scheduler,
// kube-controller-manager (with the CSR signer enabled) and KWOK playing nodes. The binaries are
// the test bed's, built from source by `make tools` into bin/testbed.
//
// As root on Linux, a cluster can also get one real node (ClusterOptions.RealNode): containerd
// and runc, kubelet and kube-proxy (built by `make realnode` into bin/realnode), bridge and
// host-local CNI, in a network namespace of its own linked to the host by a veth pair, running
// locally built images (no registry).
//
// Every file a cluster needs lives in one folder under the OS temp folder, and every process it
// starts dies with the process that started it (parent-death signal). Stop removes all of them,
// a real node's containers, mounts, namespaces, links, iptables rules and cgroups included.
package testenv
