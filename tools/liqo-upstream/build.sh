#!/usr/bin/env bash
# Builds the upstream Liqo components a peering with networking disabled runs (controller
# manager, webhook, CRD replicator, virtual kubelet, and the chart's API-server proxy and
# pre-delete uninstaller), at a pinned version, once, for the mixed
# test bed of docs/upstream-testbed.md. Same pattern as tools/liqoctl/build.sh: the module comes
# from the Go module proxy (`go install ...@version` is refused: its go.mod has a replace
# directive), is copied somewhere writable and built there with its own go.mod and go.sum.
# Output: the directory $1 (default <repo>/bin/liqo-upstream-<version>) holding one binary per
# component, upstream's Helm chart (chart/, whose RBAC and configuration objects the test bed
# renders and applies) and a stamp file naming the version; nothing is rebuilt when the stamp
# matches.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
LIQO_VERSION=v1.2.0
out=${1:-$repo/bin/liqo-upstream-$LIQO_VERSION}
# Absolute: the build runs in a copy of the module elsewhere.
mkdir -p "$out" && out=$(cd "$out" && pwd)
# The main packages under cmd/ of the upstream module, each built to a binary of the same name.
components=(liqo-controller-manager webhook crd-replicator virtual-kubelet proxy uninstaller)
stamp="$out/.stamp"
want="$LIQO_VERSION ${components[*]} chart"

if [[ -f "$stamp" && "$(cat "$stamp")" == "$want" ]]; then
  echo "liqo-upstream: $out holds $want"
  exit 0
fi
echo "liqo-upstream: building upstream Liqo $LIQO_VERSION (${components[*]}) into $out (cold: about 6.5 CPU-minutes, 18 min on a busy 2-core machine)"
start=$(date +%s)
dir=$(go mod download -json "github.com/liqotech/liqo@$LIQO_VERSION" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
if [[ -z "$dir" || ! -d "$dir" ]]; then
  echo "liqo-upstream: the module github.com/liqotech/liqo@$LIQO_VERSION could not be downloaded" >&2
  exit 1
fi
src=$(mktemp -d "${TMPDIR:-/tmp}/liqo-upstream-src.XXXXXX")
trap 'rm -rf "$src"' EXIT
cp -r "$dir"/. "$src"/
chmod -R u+w "$src"
mkdir -p "$out"
rm -f "$stamp"
pkgs=()
for c in "${components[@]}"; do pkgs+=("./cmd/$c"); done
# One go build for all packages shares the dependency compilation; -o to a directory names
# each binary after its package.
(cd "$src" && CGO_ENABLED=0 GOFLAGS=-mod=mod go build -trimpath -buildvcs=false -ldflags "-s -w" -o "$out/" "${pkgs[@]}")
rm -rf "$out/chart" && cp -r "$dir/deployments/liqo" "$out/chart" && chmod -R u+w "$out/chart"
echo "$want" >"$stamp"
ls -l "$out"
echo "liqo-upstream: built in $(( $(date +%s) - start ))s"
