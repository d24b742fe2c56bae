#!/usr/bin/env bash
# Builds the Helm CLI from source through the Go module proxy, once, for the chart tests
# (deploy/liqo). Each Helm major has its own module folder that pins it (its `tool` line) with its
# dependencies in go.sum: tools/helm (helm.sh/helm/v3) and tools/helm4 (helm.sh/helm/v4). The
# binary is version-stamped as helm's release Makefile does it (internal/version; Helm 3 also takes
# the Kubernetes version `helm lint` and `helm template` assume by -X, Helm 4 reads it from its
# client-go's version in the build info).
# Usage: build.sh [OUT] [MODULE_FOLDER]. OUT defaults to <repo>/bin/helm-<version>, and its name must
# end in the version the folder pins (the Makefile names the version once). A stamp file beside it
# records the inputs; when it matches and the binary is there, nothing is rebuilt.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
mod=$(cd "${2:-$here}" && pwd)
tool=$(awk '$1 == "tool" && $2 ~ /^helm\.sh\/helm\/v[0-9]+\/cmd\/helm$/ {print $2}' "$mod/go.mod")
if [[ -z "$tool" ]]; then
  echo "helm: $mod/go.mod has no 'tool helm.sh/helm/vN/cmd/helm' line" >&2
  exit 1
fi
helm_mod=${tool%/cmd/helm}
cd "$mod"
HELM_VERSION=$(go list -m -f '{{.Version}}' "$helm_mod")
out=${1:-$repo/bin/helm-$HELM_VERSION}
if [[ "$out" != *"-$HELM_VERSION" ]]; then
  echo "helm: $mod/go.mod requires $helm_mod $HELM_VERSION, but the output is $out; make them agree" >&2
  exit 1
fi

stamp="$out.stamp"
stamp_want=$(cat "$mod/go.mod" "$mod/go.sum" "$here/build.sh" | sha256sum | cut -c1-16)
if [[ -x "$out" && -f "$stamp" && "$(cat "$stamp")" == "$stamp_want" ]]; then
  echo "helm: $out is $HELM_VERSION"
  exit 0
fi

echo "helm: building helm $HELM_VERSION from source into $out (cold: about 4 min on 2 cores)"
start=$(date +%s)
rm -f "$stamp"
mkdir -p "$(dirname "$out")"
ldflags="-s -w"
ldflags+=" -X $helm_mod/internal/version.version=$HELM_VERSION"
ldflags+=" -X $helm_mod/internal/version.metadata="
ldflags+=" -X $helm_mod/internal/version.gitTreeState=clean"
if [[ "$helm_mod" == helm.sh/helm/v3 ]]; then
  # The Kubernetes version Helm 3 assumes offline: its client-go's, as helm's Makefile computes it
  # (client-go v0.X.Y is Kubernetes 1.X).
  k8s=$(go list -m -f '{{.Version}}' k8s.io/client-go)
  k8s_minor=${k8s#v0.}; k8s_minor=${k8s_minor%%.*}
  for pkg in helm.sh/helm/v3/pkg/lint/rules helm.sh/helm/v3/pkg/chartutil; do
    ldflags+=" -X $pkg.k8sVersionMajor=1 -X $pkg.k8sVersionMinor=$k8s_minor"
  done
fi
CGO_ENABLED=0 go build -trimpath -buildvcs=false -ldflags "$ldflags" -o "$out" "$tool"
"$out" version --short
echo "$stamp_want" > "$stamp"
echo "helm: built in $(( $(date +%s) - start ))s"
