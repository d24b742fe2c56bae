# The public key of a WireGuard private key (both base64, as `wg genkey` / `wg pubkey` print).
# Prefer keeping private keys out of the configuration: this is seed 003's throwaway test key.
output "public_key" {
  value = provider::liqo::wireguard_public_key("YFnVJbOhOlRaqDEyg7yOSo5fKPbCQ9RYXuIdYjyGLmo=")
  # "PcoRfoRt4C0tBDowW2H6PoYvAu0z/in7el/5EHaBLQo="
}

# With an ephemeral key pair, as a check:
ephemeral "liqo_wireguard_keypair" "gw" {}

locals {
  # Ephemeral in, ephemeral out: usable in write-only attributes, preconditions and other ephemeral contexts.
  derived_public_key = provider::liqo::wireguard_public_key(ephemeral.liqo_wireguard_keypair.gw.private_key)
}
