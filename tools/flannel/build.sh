#!/usr/bin/env bash
# Builds the pod network of the multi-node real test bed from source through the Go module
# proxy, once, into $1 (default: <repo>/bin/flannel):
#   flanneld     flannel's own main package (github.com/flannel-io/flannel, the version this
#                folder's go.mod requires), built from this module with a copy of its main.go
#                (an -overlay file, nothing is written into the module cache) that leaves out the
#                Tencent Cloud backend, whose SDK the module proxy does not serve, and the UDP
#                backend, which needs cgo; VXLAN and the others stay.
#   cni/flannel  the CNI plugin of type "flannel" (./cni-flannel, flannel's CNI plugin's
#                configuration and behaviour: github.com/flannel-io/cni-plugin is not served).
# The CNI plugins it delegates to (bridge, host-local, loopback, portmap) are the system's
# (/usr/lib/cni, `make deps`), as in the single-node bridge mode. A stamp file of its own
# records the inputs; when it matches, nothing is rebuilt. This is a module of its own, not
# tools/go.mod: flannel's requirements (client-go v0.34, netlink, ...) would otherwise move the
# versions the kubelet, kube-proxy and control-plane builds resolve, and their stamps.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
out=${1:-$repo/bin/flannel}
FLANNEL_VERSION=v0.28.10

stamp_want=$(cat "$here/go.mod" "$here/go.sum" "$here/build.sh" "$here/deps.go" "$here/cni-flannel/main.go" | sha256sum | cut -c1-16)
if [[ -f "$out/.stamp" && "$(cat "$out/.stamp")" == "$stamp_want" ]]; then
  echo "flannel: flanneld $FLANNEL_VERSION and the flannel CNI plugin in $out are current"
  exit 0
fi

cd "$here"
have=$(go list -m -f '{{.Version}}' github.com/flannel-io/flannel)
if [[ "$have" != "$FLANNEL_VERSION" ]]; then
  echo "flannel: tools/flannel/go.mod requires flannel $have, build.sh says $FLANNEL_VERSION; make them agree" >&2
  exit 1
fi
echo "flannel: building flanneld $FLANNEL_VERSION and the flannel CNI plugin into $out (cold: about 7 min on 2 cores)"
start=$(date +%s)
mkdir -p "$out/cni"
rm -f "$out/.stamp"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
go mod download github.com/flannel-io/flannel
src=$(go list -m -f '{{.Dir}}' github.com/flannel-io/flannel)
grep -v -e '"github.com/flannel-io/flannel/pkg/backend/tencentvpc"' -e '"github.com/flannel-io/flannel/pkg/backend/udp"' \
  "$src/main.go" > "$work/main.go"
printf '{"Replace":{"%s":"%s"}}\n' "$here/flanneld/main.go" "$work/main.go" > "$work/overlay.json"
CGO_ENABLED=0 go build -trimpath -overlay "$work/overlay.json" \
  -ldflags "-s -w -X github.com/flannel-io/flannel/pkg/version.Version=$FLANNEL_VERSION" \
  -o "$out/flanneld" ./flanneld
CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o "$out/cni/flannel" ./cni-flannel
"$out/flanneld" --version
echo "$stamp_want" > "$out/.stamp"
echo "flannel: built in $(( $(date +%s) - start ))s into $out"
