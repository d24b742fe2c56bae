#!/usr/bin/env bash
# The dependency step of `make demo`, `make sandbox` and `make test` (`make deps`): the system
# packages they use and a Terraform CLI.
#
# Packages: as root on a Debian-like system (apt-get on PATH) the missing ones are installed;
# otherwise the script prints the exact command to run and why, and fails only when something
# every run needs is missing (a root-only package is not needed without root: the gateways and
# their tests do not run then).
# Terraform: the `terraform` on PATH when it is recent enough, otherwise one built from source
# into $TERRAFORM_DIR (the make file puts that folder first on PATH).
#
# Environment: TERRAFORM_DIR (default <repo>/bin/terraform-cli), TERRAFORM_MIN (default 1.14.0: list resources and actions),
# TERRAFORM_BUILD (default tools/terraform/build.sh; tests stub it), DEPS_SKIP_TERRAFORM=1 to check
# only the packages, DEPS_CNI_DIR (default /usr/lib/cni, where Debian puts the CNI plugins; tests
# point it elsewhere).
#
# Only bash builtins are used besides the package manager and the tools checked, so that the
# script runs with any PATH (its test runs it with one made for the purpose).
set -euo pipefail

here=${BASH_SOURCE[0]%/*}
[[ $here == "${BASH_SOURCE[0]}" ]] && here=.
repo=$(cd "$here/.." && pwd)

cni_dir=${DEPS_CNI_DIR:-/usr/lib/cni}

# What the runs use: the command looked for (or, for a path, the executable file), its Debian
# package, who needs it, and why.
# who: "all" (every run) or "root" (only runs as root: the sandbox's network, the gateway tests
# and the real-node test bed).
requirements=(
  "setpriv|util-linux|all|the test bed starts the API servers' helper processes with setpriv"
  "ip|iproute2|root|the sandbox and the gateway tests build network namespaces, veth links and routes"
  "iptables|iptables|root|the sandbox sends its stand-in node ports to the gateways with iptables rules"
  "iperf3|iperf3|root|the tunnel throughput test and benchmark measure with iperf3"
  "containerd|containerd|root|the real-node test bed runs its pods' containers with containerd"
  "runc|runc|root|containerd starts the real node's containers with runc"
  "$cni_dir/bridge|containernetworking-plugins|root|the real node's pods are networked by the bridge and host-local CNI plugins"
)

# present REQ: whether the command REQ is on PATH, or, when REQ is a path, the file is executable.
present() {
  if [[ $1 == /* ]]; then
    [[ -x $1 ]]
  else
    command -v "$1" >/dev/null 2>&1
  fi
}

# where REQ: how a missing REQ is described.
where() {
  if [[ $1 == /* ]]; then
    echo "$1 is missing"
  else
    echo "$1 is not on PATH"
  fi
}

missing_pkgs=()  # packages to install
missing_all=0    # how many of them every run needs
for req in "${requirements[@]}"; do
  IFS='|' read -r cmd pkg who why <<<"$req"
  if present "$cmd"; then
    continue
  fi
  if [[ $who == root && $EUID -ne 0 ]]; then
    echo "deps: $(where "$cmd"); $why (only as root). As root: apt-get install -y $pkg"
    continue
  fi
  echo "deps: $(where "$cmd"): $why (Debian package $pkg)"
  missing_pkgs+=("$pkg")
  [[ $who == all ]] && missing_all=$((missing_all + 1))
done

if ((${#missing_pkgs[@]})); then
  if [[ $EUID -eq 0 ]] && command -v apt-get >/dev/null 2>&1; then
    echo "deps: installing ${missing_pkgs[*]} (apt-get)"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends "${missing_pkgs[@]}"
    for req in "${requirements[@]}"; do
      IFS='|' read -r cmd pkg who why <<<"$req"
      for p in "${missing_pkgs[@]}"; do
        if [[ $p == "$pkg" ]] && ! present "$cmd"; then
          if [[ $cmd == /* ]]; then
            echo "deps: $pkg is installed but $cmd is still missing" >&2
          else
            echo "deps: $pkg is installed but $cmd is still not on PATH ($PATH)" >&2
          fi
          exit 1
        fi
      done
    done
  elif [[ $EUID -ne 0 ]]; then
    echo "deps: run as root: apt-get install -y ${missing_pkgs[*]}" >&2
    ((missing_all == 0)) || exit 1
  else
    echo "deps: no apt-get here: install the packages that provide ${missing_pkgs[*]} with this system's package manager" >&2
    ((missing_all == 0)) || exit 1
  fi
else
  echo "deps: system packages present"
fi

[[ ${DEPS_SKIP_TERRAFORM:-} == 1 ]] && exit 0

# terraform: version "1.14.9" from "Terraform v1.14.9" (first line of `terraform version`).
terraform_dir=${TERRAFORM_DIR:-$repo/bin/terraform-cli}
min=${TERRAFORM_MIN:-1.14.0}
version_at_least() { # version_at_least HAVE WANT: both x.y.z
  local IFS=.
  local -a have=($1) want=($2)
  for i in 0 1 2; do
    ((10#${have[i]:-0} > 10#${want[i]:-0})) && return 0
    ((10#${have[i]:-0} < 10#${want[i]:-0})) && return 1
  done
  return 0
}
if command -v terraform >/dev/null 2>&1; then
  line=$(TF_CLI_CONFIG_FILE=/dev/null terraform version 2>/dev/null) || line=""
  line=${line%%$'\n'*}
  have=${line#Terraform v}
  have=${have%%[-+ ]*}
  if [[ $have =~ ^[0-9]+\.[0-9]+\.[0-9]+$ ]] && version_at_least "$have" "$min"; then
    echo "deps: terraform $have ($(command -v terraform))"
    exit 0
  fi
  echo "deps: the terraform on PATH ($(command -v terraform)) is '${line:-unknown}', older than $min: building one from source into $terraform_dir"
else
  echo "deps: terraform is not on PATH: building it from source into $terraform_dir (about 6 min, once; install Terraform >= $min on PATH to skip this)"
fi
"$BASH" "${TERRAFORM_BUILD:-$repo/tools/terraform/build.sh}" "$terraform_dir/terraform"
