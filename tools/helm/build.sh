#!/usr/bin/env bash
# Builds the Helm CLI from source through the Go module proxy, once, for the chart tests
# (deploy/liqo): this folder is a module that pins helm.sh/helm/v3 (its `tool` line) with its
# dependencies in go.sum. The binary is version-stamped as helm's release Makefile does it
# (internal/version, and the Kubernetes version `helm lint` and `helm template` assume).
# Output: $1 (default <repo>/bin/helm-<version>). A stamp file beside it records the inputs; when
# it matches and the binary is there, nothing is rebuilt.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
HELM_VERSION=v3.22.0
out=${1:-$repo/bin/helm-$HELM_VERSION}

stamp="$out.stamp"
stamp_want=$(cat "$here/go.mod" "$here/go.sum" "$here/build.sh" | sha256sum | cut -c1-16)
if [[ -x "$out" && -f "$stamp" && "$(cat "$stamp")" == "$stamp_want" ]]; then
  echo "helm: $out is $HELM_VERSION"
  exit 0
fi

cd "$here"
have=$(go list -m -f '{{.Version}}' helm.sh/helm/v3)
if [[ "$have" != "$HELM_VERSION" ]]; then
  echo "helm: tools/helm/go.mod requires helm.sh/helm/v3 $have, build.sh says $HELM_VERSION; make them agree" >&2
  exit 1
fi
# The Kubernetes version helm assumes offline (`helm template`, `helm lint`): its client-go's,
# as helm's Makefile computes it (client-go v0.X.Y is Kubernetes 1.X).
k8s=$(go list -m -f '{{.Version}}' k8s.io/client-go)
k8s_minor=${k8s#v0.}; k8s_minor=${k8s_minor%%.*}

echo "helm: building helm $HELM_VERSION from source into $out (cold: about 4 min on 2 cores)"
start=$(date +%s)
rm -f "$stamp"
mkdir -p "$(dirname "$out")"
ldflags="-s -w"
ldflags+=" -X helm.sh/helm/v3/internal/version.version=$HELM_VERSION"
ldflags+=" -X helm.sh/helm/v3/internal/version.metadata="
ldflags+=" -X helm.sh/helm/v3/internal/version.gitTreeState=clean"
for pkg in helm.sh/helm/v3/pkg/lint/rules helm.sh/helm/v3/pkg/chartutil; do
  ldflags+=" -X $pkg.k8sVersionMajor=1 -X $pkg.k8sVersionMinor=$k8s_minor"
done
CGO_ENABLED=0 go build -trimpath -buildvcs=false -ldflags "$ldflags" -o "$out" helm.sh/helm/v3/cmd/helm
"$out" version --short
echo "$stamp_want" > "$stamp"
echo "helm: built in $(( $(date +%s) - start ))s"
