#!/usr/bin/env bash
# Builds the OpenTofu CLI from source through the Go module proxy, once, for the tests that run the
# examples under OpenTofu as well as Terraform (test/e2e). OpenTofu's module builds as it is, in
# its own folder of the module cache, with its own go.mod and go.sum (its replace directive, for
# its fork of hcl, rules out `go install ...@version` and a wrapper module would have to repeat it):
# `go mod download` fetches it, `go build ./cmd/tofu` runs there, read-only. The version is
# stamped as OpenTofu's release build does it (version.dev=no), so `tofu version` prints
# "OpenTofu v1.12.6", not "-dev".
# Usage: build.sh [OUT]; OUT defaults to <repo>/bin/tofu-<version>. A stamp file beside it records
# the inputs; when it matches and the binary is there, nothing is rebuilt.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
TOFU_VERSION=v1.12.6
out=${1:-$repo/bin/tofu-$TOFU_VERSION}
case "$out" in /*) ;; *) out=$PWD/$out ;; esac
if [[ "$out" != *"-$TOFU_VERSION" ]]; then
  echo "tofu: this script builds OpenTofu $TOFU_VERSION, but the output is $out; make them agree" >&2
  exit 1
fi

# The stamp: the version and this script.
stamp="$out.stamp"
stamp_want="OpenTofu $TOFU_VERSION $(sha256sum < "$here/build.sh" | cut -c1-16)"
[[ -x "$out" && "$(cat "$stamp" 2>/dev/null)" == "$stamp_want" ]] && { echo "tofu: $out is OpenTofu $TOFU_VERSION"; exit 0; }
rm -f "$stamp" && mkdir -p "$(dirname "$out")"
start=$(date +%s)
echo "tofu: building OpenTofu $TOFU_VERSION from source into $out (cold: 5 to 10 min on 2 cores)"
mod=github.com/opentofu/opentofu@$TOFU_VERSION
# Outside any module, so that this repository's go.mod plays no part.
(cd / && GOWORK=off GOFLAGS= go mod download "$mod")
dir=$(GOWORK=off GOFLAGS= go env GOMODCACHE)/$mod
cd "$dir"
GOWORK=off GOFLAGS=-mod=readonly go build -trimpath -buildvcs=false \
  -ldflags "-s -w -X github.com/opentofu/opentofu/version.dev=no" -o "$out" ./cmd/tofu
got=$(TF_CLI_CONFIG_FILE=/dev/null CHECKPOINT_DISABLE=1 "$out" version | sed -n 1p)
if [[ "$got" != "OpenTofu $TOFU_VERSION" ]]; then
  echo "tofu: $out says \"$got\", want \"OpenTofu $TOFU_VERSION\"" >&2
  exit 1
fi
echo "$got"
echo "$stamp_want" > "$stamp"
echo "tofu: built in $(( $(date +%s) - start ))s"
