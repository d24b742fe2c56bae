#!/usr/bin/env bash
# Builds upstream Liqo's liqoctl at a pinned version, once, for the compatibility tests: the
# module comes from the Go module proxy (`go install ...@version` is refused: its go.mod has a
# replace directive), is copied somewhere writable and built there, stamped with its version.
# Output: $1 (default <repo>/bin/liqoctl-<version>); nothing is rebuilt when it is there and
# reports that version. Upstream's CRDs of that version are copied beside it
# (<repo>/bin/liqo-crds-<version>), for the tests that apply our objects to them.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
LIQO_VERSION=v1.2.0
out=${1:-$repo/bin/liqoctl-$LIQO_VERSION}

crds="$repo/bin/liqo-crds-$LIQO_VERSION"
module_dir() {
  go mod download -json "github.com/liqotech/liqo@$LIQO_VERSION" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p'
}
copy_crds() {
  rm -rf "$crds.tmp" && mkdir -p "$crds.tmp"
  cp "$1"/deployments/liqo/charts/liqo-crds/crds/*.yaml "$crds.tmp"/
  chmod -R u+w "$crds.tmp" && rm -rf "$crds" && mv "$crds.tmp" "$crds"
  echo "liqoctl: upstream $LIQO_VERSION CRDs in $crds ($(ls "$crds" | wc -l) files)"
}
if [[ -x "$out" ]] && "$out" version --client 2>/dev/null | grep "Client version: $LIQO_VERSION$" >/dev/null; then
  echo "liqoctl: $out is $LIQO_VERSION"
  if [[ ! -d "$crds" ]]; then
    copy_crds "$(module_dir)"
  fi
  exit 0
fi
echo "liqoctl: building upstream liqoctl $LIQO_VERSION into $out (cold: about 3.5 min on 2 cores)"
start=$(date +%s)
dir=$(module_dir)
if [[ -z "$dir" || ! -d "$dir" ]]; then
  echo "liqoctl: the module github.com/liqotech/liqo@$LIQO_VERSION could not be downloaded" >&2
  exit 1
fi
src="$repo/bin/liqo-src-$LIQO_VERSION"
rm -rf "$src"
mkdir -p "$(dirname "$src")"
cp -r "$dir" "$src"
chmod -R u+w "$src"
(cd "$src" && CGO_ENABLED=0 go build -trimpath -buildvcs=false \
  -ldflags "-s -w -X github.com/liqotech/liqo/pkg/liqoctl/version.LiqoctlVersion=$LIQO_VERSION" -o "$out" ./cmd/liqoctl)
rm -rf "$src"
copy_crds "$dir"
"$out" version --client
echo "liqoctl: built in $(( $(date +%s) - start ))s"
