#!/usr/bin/env bash
# Builds the test bed's binaries from source through the Go module proxy, once:
# kube-apiserver, kube-controller-manager, kube-scheduler and kubectl (k8s.io/kubernetes),
# etcd (go.etcd.io/etcd/server/v3) and kwok (sigs.k8s.io/kwok), version-stamped, into $1
# (default: <repo>/bin/testbed). A stamp file records the pinned versions; when it matches,
# nothing is rebuilt.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
tools=$(cd "$here/.." && pwd)
repo=$(cd "$tools/.." && pwd)
out=${1:-$repo/bin/testbed}

# shellcheck source=../k8s-version.sh
source "$tools/k8s-version.sh"
ETCD_VERSION=v3.6.5
KWOK_VERSION=v0.8.0

stamp_want=$(cat "$tools/go.mod" "$tools/go.sum" "$here/build.sh" "$tools/k8s-version.sh" "$here/etcd/main.go" | sha256sum | cut -c1-16)
if [[ -f "$out/.stamp" && "$(cat "$out/.stamp")" == "$stamp_want" ]]; then
  echo "testbed: binaries in $out are current (k8s $K8S_VERSION, etcd $ETCD_VERSION, kwok $KWOK_VERSION)"
  exit 0
fi

mkdir -p "$out"
rm -f "$out/.stamp"
start=$(date +%s)

ldflags=$(k8s_ldflags)

echo "testbed: building kube-apiserver, kube-controller-manager, kube-scheduler, kubectl $K8S_VERSION and etcd $ETCD_VERSION (cold: about 5 min on 2 cores)"
cd "$tools"
CGO_ENABLED=0 go build -trimpath -ldflags "-s -w $ldflags" -o "$out/" \
  k8s.io/kubernetes/cmd/kube-apiserver \
  k8s.io/kubernetes/cmd/kube-controller-manager \
  k8s.io/kubernetes/cmd/kube-scheduler \
  k8s.io/kubernetes/cmd/kubectl \
  ./testbed/etcd

echo "testbed: building kwok $KWOK_VERSION (cold: about 1.5 min)"
CGO_ENABLED=0 GOBIN="$out" GOFLAGS=-mod=mod go install -trimpath -ldflags "-s -w" "sigs.k8s.io/kwok/cmd/kwok@$KWOK_VERSION"

# KWOK's standalone binary has no built-in stages: keep the ones its module ships beside it.
modcache=$(go env GOMODCACHE)
stages="$modcache/sigs.k8s.io/kwok@$KWOK_VERSION/kustomize/stage"
rm -rf "$out/kwok-stages"
mkdir -p "$out/kwok-stages"
for s in node/fast/node-initialize.yaml node/heartbeat-with-lease/node-heartbeat-with-lease.yaml \
         pod/fast/pod-ready.yaml pod/fast/pod-complete.yaml pod/fast/pod-delete.yaml; do
  if [[ ! -f "$stages/$s" ]]; then
    echo "testbed: kwok stage $stages/$s not found" >&2; ls -R "$stages" >&2; exit 1
  fi
  cp "$stages/$s" "$out/kwok-stages/"
done
chmod -R u+w "$out/kwok-stages"

"$out/kube-apiserver" --version
"$out/etcd" --version | sed -n 1p
"$out/kwok" --version 2>/dev/null | sed -n 1p || true
echo "$stamp_want" > "$out/.stamp"
echo "testbed: built in $(( $(date +%s) - start ))s into $out"
