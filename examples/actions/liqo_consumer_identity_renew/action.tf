# terraform apply -invoke=action.liqo_consumer_identity_renew.now; the next plan takes the new
# credentials into liqo_consumer_identity.consumer (and on to liqo_identity's kubeconfig_wo).
action "liqo_consumer_identity_renew" "now" {
  config {
    cluster        = liqo_consumer_identity.consumer.cluster
    namespace      = liqo_consumer_identity.consumer.namespace
    name           = liqo_consumer_identity.consumer.name
    organization   = liqo_consumer_identity.consumer.organization
    validity_hours = liqo_consumer_identity.consumer.validity_hours
    api_server_url = liqo_consumer_identity.consumer.api_server_url
  }
}
