//go:build tools

// Package flannel pins what tools/flannel/build.sh builds: flanneld, which is flannel's own main
// package (github.com/flannel-io/flannel) built with every backend but Tencent Cloud's (whose SDK
// the module proxy does not serve), so this file imports the packages that main package imports,
// less that backend, for `go mod tidy` to keep them; and the CNI plugin in cni-flannel.
package flannel

import (
	_ "github.com/coreos/go-systemd/v22/daemon"
	_ "github.com/coreos/pkg/flagutil"
	_ "github.com/flannel-io/flannel/pkg/backend"
	_ "github.com/flannel-io/flannel/pkg/backend/alloc"
	_ "github.com/flannel-io/flannel/pkg/backend/extension"
	_ "github.com/flannel-io/flannel/pkg/backend/hostgw"
	_ "github.com/flannel-io/flannel/pkg/backend/ipip"
	_ "github.com/flannel-io/flannel/pkg/backend/ipsec"
	_ "github.com/flannel-io/flannel/pkg/backend/vxlan"
	_ "github.com/flannel-io/flannel/pkg/backend/wireguard"
	_ "github.com/flannel-io/flannel/pkg/ip"
	_ "github.com/flannel-io/flannel/pkg/ipmatch"
	_ "github.com/flannel-io/flannel/pkg/subnet"
	_ "github.com/flannel-io/flannel/pkg/subnet/etcd"
	_ "github.com/flannel-io/flannel/pkg/subnet/kube"
	_ "github.com/flannel-io/flannel/pkg/trafficmngr"
	_ "github.com/flannel-io/flannel/pkg/trafficmngr/iptables"
	_ "github.com/flannel-io/flannel/pkg/trafficmngr/nftables"
	_ "github.com/flannel-io/flannel/pkg/version"
	_ "github.com/joho/godotenv"
	_ "k8s.io/klog/v2"
)
