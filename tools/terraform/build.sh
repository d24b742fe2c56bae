#!/usr/bin/env bash
# Builds Terraform from source through the Go module proxy, for machines where `terraform` is not
# on PATH or is older than the tests need. github.com/hashicorp/terraform cannot be `go install`ed
# (its go.mod has replace directives for nested modules), so this folder is a wrapper module that
# requires it and maps each nested module to what the proxy serves: internal/legacy to a
# pseudo-version, and the remote state backends, which it does not serve at this version, to
# stand-ins generated here from stub_backend.go.tmpl (they refuse those backends; local state and
# Terraform's own backends work). Output: $1 (default <repo>/bin/terraform). With
# TERRAFORM_EXPERIMENTS=1, an experimental build (Terraform's `experimentsAllowed`, as its alpha
# releases are): it takes flags such as -allow-deferral, for the deferred-changes tests.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
out=${1:-$repo/bin/terraform}
TERRAFORM_VERSION=v1.14.9
# The remote state backends replaced by stand-ins in go.mod.
STUBBED_BACKENDS="azure consul cos gcs kubernetes oci oss pg s3"

ldflags="-s -w -X github.com/hashicorp/terraform/version.dev=no"
what="Terraform ${TERRAFORM_VERSION}"
if [[ ${TERRAFORM_EXPERIMENTS:-} == 1 ]]; then
  ldflags+=" -X main.experimentsAllowed=yes"
  what+=" (experiments allowed)"
fi
stamp="$out.stamp"
if [[ -x "$out" && -f "$stamp" && $(cat "$stamp") == "$what" ]]; then
  echo "terraform: $out is $what"
  exit 0
fi
echo "terraform: building $what from source into $out (about 6 min; a minute when the other build is done)"
cd "$here"
for b in $STUBBED_BACKENDS; do
  mkdir -p "stubs/$b"
  sed "s/NAME/$b/g" stub_backend.go.tmpl > "stubs/$b/backend.go"
  printf 'module github.com/hashicorp/terraform/internal/backend/remote-state/%s\n\ngo 1.25\n\nrequire (\n\tgithub.com/hashicorp/terraform %s\n\tgithub.com/zclconf/go-cty v1.16.2\n)\n' \
    "$b" "$TERRAFORM_VERSION" > "stubs/$b/go.mod"
done
CGO_ENABLED=0 GOFLAGS=-mod=mod go build -trimpath -ldflags "$ldflags" -o "$out" github.com/hashicorp/terraform
TF_CLI_CONFIG_FILE=/dev/null "$out" version | sed -n 1p
echo "$what" > "$stamp"
