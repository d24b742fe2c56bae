#!/usr/bin/env bash
# Builds the binaries of a real test node from source through the Go module proxy, once:
# kubelet and kube-proxy (k8s.io/kubernetes, the same version as the test bed's control plane),
# version-stamped as tools/testbed/build.sh stamps its binaries, into $1 (default:
# <repo>/bin/realnode). A stamp file of its own records the inputs; when it matches, nothing is
# rebuilt (and the test bed's binaries are never touched).
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
tools=$(cd "$here/.." && pwd)
repo=$(cd "$tools/.." && pwd)
out=${1:-$repo/bin/realnode}

# shellcheck source=../k8s-version.sh
source "$tools/k8s-version.sh"

stamp_want=$(cat "$tools/go.mod" "$tools/go.sum" "$here/build.sh" "$tools/k8s-version.sh" "$here/deps.go" | sha256sum | cut -c1-16)
if [[ -f "$out/.stamp" && "$(cat "$out/.stamp")" == "$stamp_want" ]]; then
  echo "realnode: kubelet and kube-proxy in $out are current (k8s $K8S_VERSION)"
  exit 0
fi

mkdir -p "$out"
rm -f "$out/.stamp"
start=$(date +%s)

ldflags=$(k8s_ldflags)

echo "realnode: building kubelet and kube-proxy $K8S_VERSION (cold: about 3.5 min on 2 cores)"
cd "$tools"
CGO_ENABLED=0 go build -trimpath -ldflags "-s -w $ldflags" -o "$out/" \
  k8s.io/kubernetes/cmd/kubelet \
  k8s.io/kubernetes/cmd/kube-proxy

"$out/kubelet" --version
"$out/kube-proxy" --version
echo "$stamp_want" > "$out/.stamp"
echo "realnode: built in $(( $(date +%s) - start ))s into $out"
