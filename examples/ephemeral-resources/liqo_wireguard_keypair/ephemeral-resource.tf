# A key pair generated in the provider process, never stored in the plan or the state
# (Terraform >= 1.11 for write-only attributes). It is generated anew at each plan and apply:
# private_key_wo_version decides when the stored key changes.
ephemeral "liqo_wireguard_keypair" "gw" {}

resource "liqo_gateway_keys" "gw" {
  cluster                = "consumer"
  namespace              = "liqo-tenant-cl-provider"
  remote_cluster_id      = "cl-provider"
  private_key_wo         = ephemeral.liqo_wireguard_keypair.gw.private_key
  private_key_wo_version = 1
}

# The public key actually written (read back from the Secret), for the peer.
output "consumer_public_key" {
  value = liqo_gateway_keys.gw.public_key
}
