#!/usr/bin/env bash
# Builds Terraform from source through the Go module proxy, for machines where `terraform` is not
# on PATH. github.com/hashicorp/terraform cannot be `go install`ed (its go.mod has replace
# directives for nested modules), so this folder is a wrapper module that requires it and maps
# each nested module to the pseudo-version the proxy serves. Output: $1 (default <repo>/bin/terraform).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
out=${1:-$repo/bin/terraform}
TERRAFORM_VERSION=v1.11.4

if [[ -x "$out" ]] && TF_CLI_CONFIG_FILE=/dev/null "$out" version 2>/dev/null | head -1 | grep -q "Terraform ${TERRAFORM_VERSION}$"; then
  echo "terraform: $out is ${TERRAFORM_VERSION}"
  exit 0
fi
echo "terraform: building Terraform ${TERRAFORM_VERSION} from source into $out (about 3 min)"
cd "$here"
CGO_ENABLED=0 GOFLAGS=-mod=mod go build -trimpath -ldflags "-s -w -X github.com/hashicorp/terraform/version.dev=no" -o "$out" github.com/hashicorp/terraform
TF_CLI_CONFIG_FILE=/dev/null "$out" version | head -1
