# Seed 004's tethered mode on the home cluster (the "laptop" key of the provider block's clusters
# map): its namespaces are offloaded to the foreign cluster, which schedules its workloads. The
# home must have a virtual node of the foreign cluster first (a liqo_peering with the home as
# consumer); a liqo_peering of the foreign cluster as consumer with resource_slice_class =
# "tethered" then gets all of the home's resources (examples/tethered has the three together).
resource "liqo_tethering" "laptop" {
  cluster            = "laptop"
  foreign_cluster_id = "cl-corp" # e.g. liqo_peering.laptop_on_corp.provider_cluster_id
}
