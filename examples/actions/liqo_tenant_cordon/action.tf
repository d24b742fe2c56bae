# terraform apply -invoke=action.liqo_tenant_cordon.drain, then .uncordon
action "liqo_tenant_cordon" "drain" {
  config {
    cluster             = "provider"
    consumer_cluster_id = data.liqo_cluster.consumer.cluster_id
    tenant_condition    = "Drained"
  }
}

action "liqo_tenant_cordon" "uncordon" {
  config {
    cluster             = "provider"
    consumer_cluster_id = data.liqo_cluster.consumer.cluster_id
    tenant_condition    = "Active"
  }
}
