#!/usr/bin/env bash
# Prints `terraform providers schema -json` for the provider built from this tree, through a
# dev_overrides CLI configuration (nothing is downloaded). Used by `make docs`.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
go build -o "$work/bin/terraform-provider-liqo" "$repo"
cat > "$work/terraformrc" <<RC
provider_installation {
  dev_overrides {
    "peerkit/liqo" = "$work/bin"
  }
  direct {}
}
RC
cat > "$work/main.tf" <<'TF'
terraform {
  required_providers {
    liqo = { source = "peerkit/liqo" }
  }
}
TF
cd "$work"
TF_CLI_CONFIG_FILE="$work/terraformrc" TF_IN_AUTOMATION=1 CHECKPOINT_DISABLE=1 terraform providers schema -json 2>/dev/null
