# Sourced by tools/testbed/build.sh and tools/realnode/build.sh: the Kubernetes version both
# build (it must match k8s.io/kubernetes in tools/go.mod) and the version stamp the release
# build sets, so that the binaries report it (not v0.0.0-master).
K8S_VERSION=v1.35.8

# k8s_ldflags prints the -X flags that stamp K8S_VERSION.
k8s_ldflags() {
  local minor=${K8S_VERSION#v1.} pkg out=""
  minor=${minor%%.*}
  for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
    out+=" -X $pkg.gitVersion=$K8S_VERSION -X $pkg.gitMajor=1 -X $pkg.gitMinor=$minor"
    out+=" -X $pkg.gitTreeState=clean -X $pkg.buildDate=1970-01-01T00:00:00Z"
  done
  echo "$out"
}
